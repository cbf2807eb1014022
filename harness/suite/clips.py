"""Clips by recipe: each is made once, kept in a content-addressed store, and found again by a rebuild.

A clip's recipe is what makes its samples: ``stable_hash({text, voice's sound, synthesiser and version, processing
version})`` (:func:`clip_recipe`), the idea of the counterfactual arms' recipes (:mod:`harness.data.voice_transforms.
arm_audio`). The store keeps the clip as ``<store>/<recipe[:2]>/<recipe>.flac``, written to a temporary file and
renamed, so that a build killed at any point leaves whole clips only, and the next build makes only the clips whose
recipe it does not hold: a changed text, voice spec or synthesiser version is a new recipe. Clips are made over the
cores (:func:`harness.core.parallel.map_in_processes`, ``LALM_WORKERS``) with a progress bar.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from harness.core.parallel import map_in_processes
from harness.core.progress import Progress
from harness.core.values import stable_hash
from harness.suite.audio import PROCESSING_VERSION, processed, write_flac
from harness.suite.banks import get_bank
from harness.suite.voices import VoiceSpec, parse_voice_spec


@dataclasses.dataclass(frozen=True)
class Clip:
    """One item read by one voice: the ``key`` its layout names it by (an utterance id, or a BASIS audio path), the
    ``text`` read, the ``voice`` and the ``recipe``."""

    key: str
    text: str
    voice: VoiceSpec
    recipe: str


def clip_recipe(text: str, recipe_parts: dict) -> str:
    """``stable_hash({text, processing version, **recipe_parts})``: ``recipe_parts`` is the bank's
    :meth:`~harness.suite.banks.VoiceBank.recipe_parts` of the voice (its sound and synthesiser version)."""
    return stable_hash({"text": text, "processing": PROCESSING_VERSION, **recipe_parts})


class ClipStore:
    """Made clips in ``directory`` by recipe; ``made`` counts the clips this store synthesised, ``reused`` those it
    found."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.made = 0
        self.reused = 0

    def path(self, recipe: str) -> Path:
        return self.directory / recipe[:2] / f"{recipe}.flac"

    def holds(self, recipe: str) -> bool:
        return self.path(recipe).is_file()

    def make(self, clips: Sequence[Clip], progress: bool = True) -> None:
        """Synthesise, over the cores, the clips whose recipe the store does not hold."""
        missing = list({clip.recipe: clip for clip in clips if not self.holds(clip.recipe)}.values())
        self.reused += len({clip.recipe for clip in clips}) - len(missing)
        jobs = [(clip.voice.sound, clip.text, str(self.path(clip.recipe))) for clip in missing]
        forked = [job for job, clip in zip(jobs, missing) if get_bank(clip.voice.bank).parallel]
        here = [job for job, clip in zip(jobs, missing) if not get_bank(clip.voice.bank).parallel]
        map_in_processes(make_clip, forked, "synthesis", chunk_size=2, progress=progress)
        with Progress(len(here), "synthesis (in this process)") if progress else contextlib.nullcontext() as bar:
            for job in here:
                make_clip(job)
                if bar is not None:
                    bar.update()
        self.made += len(missing)

    def samples(self, recipe: str) -> np.ndarray:
        samples, _ = sf.read(self.path(recipe), dtype="float64")
        return samples

    def transcripts(self, recipes: Sequence[str], fingerprint: str, transcribe) -> list[str]:
        """The transcripts of ``recipes`` by the ASR whose fingerprint is ``fingerprint``: kept beside each clip
        (``<recipe>.<hash of the fingerprint>.asr.txt``) so that a rebuild asks the ASR only about new clips; the
        others are transcribed now (``transcribe``: samples -> transcripts). An empty fingerprint keeps nothing."""
        if not fingerprint:
            return list(transcribe([self.samples(recipe) for recipe in recipes]))
        suffix = f".{stable_hash(fingerprint)[:12]}.asr.txt"
        kept = {recipe: self.path(recipe).with_suffix(suffix) for recipe in recipes}
        missing = [recipe for recipe in dict.fromkeys(recipes) if not kept[recipe].is_file()]
        for recipe, text in zip(missing, transcribe([self.samples(recipe) for recipe in missing])):
            temporary = kept[recipe].with_name(f".{kept[recipe].name}.{os.getpid()}")
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, kept[recipe])
        return [kept[recipe].read_text(encoding="utf-8") for recipe in recipes]


def make_clip(job: tuple[str, str, str]) -> None:
    """One job of :meth:`ClipStore.make`: ``(voice's sound, text, path)``, synthesised, processed and written."""
    sound, text, path = job
    voice = parse_voice_spec(sound, need_labels=False)
    samples, rate = get_bank(voice.bank).synthesise(voice, text)
    write_flac(Path(path), processed(samples, rate))
