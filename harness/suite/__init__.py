"""The spoken-suite builder (issue 49): text items read by TTS voices of known groups, admitted as BASIS-Bench does.

``lalm-fairness-suite build`` (:mod:`.cli`) turns a file of text items into a corpus (``--corpus NAME=DIR``) or a
BASIS item suite (``--basis-suite DIR``): every item is read by every voice (:mod:`.voices`: a voice spec names a
bank of :mod:`.banks`, a voice, its settings and the group labels it is meant to carry); each clip is made once per
recipe and kept by it (:mod:`.clips`); the admission filters of BASIS-Bench §3.3 and Appendix A.1.3/A.2 decide
which clips the suite keeps (:mod:`.filters`: an exact ASR transcript, the perceived group of each voice, and
outliers listed for a person to look at); :mod:`.build` writes the layout, ``provenance.json`` and the build report.
"""
