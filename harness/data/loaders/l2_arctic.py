"""L2-ARCTIC (Zhao et al. 2018; VIBE §II-C, accent, controlled complement): 24 non-native speakers of
English, 2 women and 2 men for each of six first languages, reading the CMU ARCTIC prompts.

Layout read: ``<SPK>/wav/<sentence>.wav`` and ``<SPK>/transcript/<sentence>.txt`` (one line of text) for
each speaker code; other folders (``suitcase_corpus``...) are ignored. Each speaker's first language and
gender are not in the distribution's files but in its README; they are :data:`SPEAKERS` below.

Content control (§II-C): only sentences read by every selected speaker are kept, minus every sentence
with a word of :data:`DEMOGRAPHIC_WORDS` (gender, age and race words, so that the content itself cannot
cue the model; VIBE excluded them by hand). Then ``n_sentences`` (VIBE: 400) may be drawn with ``seed``.
``content_id`` = sentence id (``arctic_a0001``). Dimensions: ``accent`` (first language) and ``gender``.
License: CC BY-NC 4.0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from harness.data.loaders._common import LoaderError, audio_reference, check_audio_files, write_corpus

NAME = "l2-arctic"
DIMENSIONS = ("accent", "gender")
# Speaker code -> (first language, gender), from the L2-ARCTIC README (v5.0).
SPEAKERS: dict[str, tuple[str, str]] = {
    "ABA": ("arabic", "male"), "SKA": ("arabic", "female"), "YBAA": ("arabic", "male"), "ZHAA": ("arabic", "female"),
    "BWC": ("mandarin", "male"), "LXC": ("mandarin", "female"), "NCC": ("mandarin", "female"), "TXHC": ("mandarin", "male"),
    "ASI": ("hindi", "male"), "RRBI": ("hindi", "male"), "SVBI": ("hindi", "female"), "TNI": ("hindi", "female"),
    "HJK": ("korean", "female"), "HKK": ("korean", "male"), "YDCK": ("korean", "female"), "YKWK": ("korean", "male"),
    "EBVS": ("spanish", "male"), "ERMS": ("spanish", "male"), "MBMPS": ("spanish", "female"), "NJS": ("spanish", "female"),
    "HQTV": ("vietnamese", "male"), "PNV": ("vietnamese", "female"), "THV": ("vietnamese", "female"), "TLV": ("vietnamese", "male"),
}  # fmt: skip

# Words that name or imply a gender, an age or a race/ethnicity. Deliberately broad: it also drops
# "white" and "black" as colours and "age" in any sense, trading sentences for content control.
GENDER_WORDS = frozenset(
    """
he him his himself she her hers herself man men woman women boy boys girl girls male males female females
masculine feminine gentleman gentlemen lady ladies sir madam ma'am mr mrs ms miss mister husband husbands
wife wives father fathers mother mothers dad daddy mom mum mama papa son sons daughter daughters brother
brothers sister sisters uncle uncles aunt aunts nephew nephews niece nieces king kings queen queens prince
princes princess princesses lord lords bride brides groom widow widows widower fellow fellows guy guys gal
lad lads lass manhood womanhood grandfather grandmother grandson granddaughter boyfriend girlfriend maiden
mistress
""".split()
)
AGE_WORDS = frozenset(
    """
old older oldest young younger youngest youth youthful elderly elder elders aged age ages ageing aging child
children childhood kid kids baby babies infant infants toddler teen teens teenage teenager teenagers
adolescent adolescents adult adults grown senior seniors juvenile boyhood girlhood
""".split()
)
RACE_WORDS = frozenset(
    """
race races racial white whites black blacks negro negroes colored coloured indian indians native natives
savage savages tribe tribes tribal eskimo eskimos asian asians african africans caucasian hispanic latino
latina mexican mexicans chinese japanese oriental arab arabs arabian jew jews jewish ethnic ethnicity
""".split()
)
DEMOGRAPHIC_WORDS = GENDER_WORDS | AGE_WORDS | RACE_WORDS
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def demographic_words_in(text: str) -> list[str]:
    """The words of ``text`` (lower-cased, possessive 's dropped) that are in :data:`DEMOGRAPHIC_WORDS`."""
    words = (word[:-2] if word.endswith("'s") else word for word in _WORD.findall(text.lower()))
    return [word for word in words if word in DEMOGRAPHIC_WORDS]


def build(
    source: str | Path,
    output: str | Path,
    *,
    speakers: Sequence[str] | None = None,
    n_sentences: int | None = None,
    seed: int = 0,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write the content-controlled L2-ARCTIC manifest and corpus.yaml into ``output``; returns it.

    ``speakers``: speaker codes to use (all 24 by default). ``n_sentences``: how many of the eligible
    sentences to draw with ``seed`` (all by default; VIBE used 400).
    """
    source, output = Path(source), Path(output)
    codes = list(speakers) if speakers is not None else list(SPEAKERS)
    unknown = sorted(set(codes) - set(SPEAKERS))
    if unknown:
        raise ValueError(f"unknown L2-ARCTIC speaker code(s) {unknown}; known: {sorted(SPEAKERS)}")
    recordings = {code: _speaker_recordings(source, code) for code in codes}
    common = sorted(set.intersection(*(set(texts) for texts in recordings.values())))
    texts = {sentence: _agreed_text(sentence, recordings) for sentence in common}
    eligible = [sentence for sentence in common if not demographic_words_in(texts[sentence])]
    n_dropped = len(common) - len(eligible)
    if n_sentences is not None:
        if n_sentences > len(eligible):
            raise LoaderError(
                f"{source}: n_sentences={n_sentences} but only {len(eligible)} sentences are read by every speaker "
                "and pass the word filter"
            )
        eligible = sorted(np.random.default_rng(seed).choice(eligible, size=n_sentences, replace=False).tolist())
    rows = []
    for code in codes:
        language, gender = SPEAKERS[code]
        for sentence in eligible:
            wav = source / code / "wav" / f"{sentence}.wav"
            rows.append((f"{code}_{sentence}", wav, code, sentence, texts[sentence], language, gender))
    table = pd.DataFrame(
        rows, columns=["utterance_id", "_path", "speaker_id", "content_id", "transcript", "accent", "gender"]
    )
    if check_audio:
        check_audio_files(table["_path"])
    table.insert(1, "audio", [audio_reference(path, output, relative_audio) for path in table["_path"]])
    table = table.drop(columns="_path")
    description = (
        f"L2-ARCTIC read from {source.resolve()}: {len(codes)} speakers (first languages "
        f"{', '.join(sorted({SPEAKERS[code][0] for code in codes}))}) each reading the same {len(eligible)} sentences: "
        f"of the {len(common)} read by every speaker, {n_dropped} were dropped for a gender, age or race word (VIBE §II-C)"
        + (f", then {n_sentences} drawn with seed {seed}." if n_sentences is not None else ".")
        + " License: CC BY-NC 4.0."
    )
    return write_corpus(output, table, name=NAME, dimensions=list(DIMENSIONS), description=description)


def _speaker_recordings(source: Path, code: str) -> dict[str, Path]:
    """Sentence id -> transcript path for every wav of a speaker; a wav without transcript is an error."""
    folder = source / code
    if not folder.is_dir():
        archive = source / f"{code}.zip"
        hint = f" ({archive} exists: unzip it first)" if archive.is_file() else ""
        raise LoaderError(f"{folder}: L2-ARCTIC speaker folder does not exist{hint}")
    wavs = sorted((folder / "wav").glob("*.wav"))
    if not wavs:
        raise LoaderError(f"{folder / 'wav'}: no .wav file for speaker {code}")
    transcripts = {}
    for wav in wavs:
        transcript = folder / "transcript" / f"{wav.stem}.txt"
        if not transcript.is_file():
            raise LoaderError(f"{wav}: no transcript at {transcript}")
        transcripts[wav.stem] = transcript
    return transcripts


def _agreed_text(sentence: str, recordings: dict[str, dict[str, Path]]) -> str:
    """The sentence's text as the first speaker's transcript gives it; any empty transcript is an error."""
    texts = []
    for transcripts in recordings.values():
        path = transcripts[sentence]
        text = " ".join(path.read_text(encoding="utf-8", errors="replace").split())
        if not text:
            raise LoaderError(f"{path}: transcript is empty")
        texts.append(text)
    return texts[0]
