"""Counterfactual voice tests (issue 39): the same recording answered in its own voice, resynthesised unchanged
(the ``identity`` arm, the control) and moved to the other group's voice (the ``swap`` arm), compared within
recording with the paired speaker-level permutation test of :mod:`harness.metrics.counterfactual`.

The check (:mod:`.check`, registered in :data:`harness.checks.CHECKS`, with :mod:`.record` and :mod:`.view`) is
built on :mod:`.settings` (the validated ``counterfactual`` section of thresholds.yaml, with the voice transforms'
arguments), :mod:`.arms` (a corpus's arms and a model's answers and transcripts on them), :mod:`.tables` (the arms,
perceived groups and answers of a gate run, through its output cache), :mod:`.perceived` (the perceived-group filter
and its unmeasured rule, ``voice:praat`` as the default perceiver), :mod:`.measure` (one VIBE case measured and
decided outside a gate run) and :mod:`.audio_dependence` (the probe that finds a model that does not hear its
audio), with :mod:`.floor` (the probe as the gate's floor: :meth:`harness.gate.Gate.verdict` makes every voice-bias
case of such a model unmeasured).
"""
