"""Counterfactual voice tests (issue 39): the same recording answered in its own voice, resynthesised unchanged
(the ``identity`` arm, the control) and moved to the other group's voice (the ``swap`` arm), compared within
recording with the paired speaker-level permutation test of :mod:`harness.metrics.counterfactual`.

:mod:`.check` (``CHECK``: the cases, their measures and verdicts, the release comparison), :mod:`.record` and
:mod:`.view` (with ``counterfactual.html.j2``) make the registered check; :mod:`.settings` (the validated
``counterfactual`` section of thresholds.yaml, with the voice transforms' arguments), :mod:`.arms` (a corpus's or
item set's arms and a model's answers on them), :mod:`.tables` (the same through a gate run's output cache),
:mod:`.perceived` (the perceived-group filter and its unmeasured rule, ``voice:praat`` as the default perceiver),
:mod:`.measure` (one VIBE case measured from plain tables). Whether a model hears its audio at all is the gate's
audio floor (:mod:`harness.gate.audio_floor`), not this check's.
"""
