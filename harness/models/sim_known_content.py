"""The simulators' ears for words: the text of the recordings they know, by audio content hash.

A pitch tracker cannot hear words, so the ``sim:`` responders that need them (transcription, spoken QA,
:mod:`harness.models.sim_basis`) look a recording's text up here; :meth:`harness.models.sim.SimulatorBackend.hear_corpus`
teaches it the session's corpora. Its own module, so that the simulator and its responders both use it without
importing each other.
"""

from __future__ import annotations

import functools

from harness.core.requests import GenerationRequest


class KnownContent:
    """Text of every recording of the shipped demo corpus and demo suite, and of the corpora the session
    :meth:`learn` (read on the first recording not found), by audio content hash: the simulator's 'ears' for
    words. Reads only the ``transcript`` and ``answer`` columns, never the demographic ones. A recording in another
    voice (a counterfactual arm, :func:`harness.data.voice_transforms.source_recording`) says what its source says."""

    def __init__(self) -> None:
        self._content: dict[str, tuple[str, str | None]] = {}
        self._pending: dict = {}
        self._learnt: set = set()
        self._shipped_read = False

    def _read_shipped(self) -> None:
        """Learn the shipped demo corpus and suite: on the first lookup, so a run whose answers are all cached
        decodes none of their recordings."""
        from harness.data import resolve_corpus
        from harness.data.basis_suite import resolve_suite

        self._shipped_read = True
        demo = resolve_corpus("demo")
        for utterance_id, transcript in zip(demo.table["utterance_id"], demo.table["transcript"]):
            self._content[demo.audio(utterance_id).content_hash] = (transcript, None)
        for item_set in resolve_suite().sets:
            for record in item_set.table.to_dict(orient="records"):
                answer = record.get("answer") if item_set.kind == "qa" else None
                key = item_set.audio(record["row"]).content_hash
                known = self._content.get(key)
                self._content[key] = (record["transcript"], answer if answer is not None else known and known[1])

    @classmethod
    @functools.cache
    def shared(cls) -> KnownContent:
        return cls()

    def learn(self, corpus) -> None:
        """Also know the transcripts of ``corpus`` (a :class:`harness.data.Corpus`), read when a recording is not found."""
        if corpus.manifest_path not in self._learnt:
            self._pending[corpus.manifest_path] = corpus

    def lookup(self, request: GenerationRequest) -> tuple[str, str | None] | None:
        if request.audio is None:
            return None
        if not self._shipped_read:
            self._read_shipped()
        if request.audio.content_hash not in self._content:
            for path, corpus in list(self._pending.items()):
                for utterance_id, transcript in zip(corpus.table["utterance_id"], corpus.table["transcript"]):
                    self._content.setdefault(corpus.audio(utterance_id).content_hash, (str(transcript), None))
                self._learnt.add(path)
                del self._pending[path]
        known = self._content.get(request.audio.content_hash)
        if known is None:
            from harness.data.voice_transforms import source_recording

            source = source_recording(request.audio)
            known = None if source is None else self._content.get(source)
        return known
