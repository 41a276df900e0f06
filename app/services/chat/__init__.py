"""The chat engine: a turn from question to stored answer.

:mod:`.service` (``ChatService``) runs a turn top-down over the stage modules beside it: the gate and
the generation slots (:mod:`.gate`, :mod:`.slots`, :mod:`.shared_slots`), retrieval with its ranking
stages (:mod:`.turn_search`, :mod:`.ranking`), the answer's review (:mod:`.answer`), the tool rounds
(:mod:`.tools`), the stored turn and its trace (:mod:`.store`, :mod:`.trace`, :mod:`.trace_model`,
:mod:`.log`), the stream's events (:mod:`.events`) and the turns others follow live (:mod:`.live`,
:mod:`.follow`, :mod:`.turns`).
"""
