"""Counterfactual voice tests (issue 39): the same recording answered in its own voice, resynthesised unchanged
(the ``identity`` arm, the control) and moved to the other group's voice (the ``swap`` arm), compared within
recording with the paired speaker-level permutation test of :mod:`harness.metrics.counterfactual`.

:mod:`.check` (``CHECK``: the cases, their measures and verdicts, the release comparison), :mod:`.record` and
:mod:`.view` (with ``counterfactual.html.j2``) make the registered check; :mod:`.settings` (the typed ``counterfactual``
section of thresholds.yaml, with the voice transforms' arguments, one object per kind of measure, and the arms'
names), :mod:`.arms` (a corpus's or item set's arms and one table builder per kind over how the model is asked),
:mod:`.tables` (the same through a gate run's output cache), :mod:`harness.perception` (the perceived-group filter and its
unmeasured rule, ``voice:formants`` as the default perceiver, calibrated on the originals by
:mod:`harness.metrics.perceiver_fit`), :mod:`.manipulation` (the manipulation checks of the
WORLD age arms: F0 and F1-F3 against the recording, an admission filter), :mod:`.measure` (a VIBE task's voice
effect and artifact from its arm table). Whether a model hears its audio at all is the gate's audio floor
(:mod:`harness.gate.audio_floor`), not this check's.
"""
