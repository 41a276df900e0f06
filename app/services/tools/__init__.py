"""Tools a chat model may call: the catalogue and its checks (:mod:`.catalog`, :mod:`.definitions`,
:mod:`.schema`), which tools a turn is offered (:mod:`.selection`), running a call (:mod:`.loop`,
:mod:`.exec`, :mod:`.http`, :mod:`.request`, :mod:`.builtins`), and the calls stored and approved
(:mod:`.calls`, :mod:`.approval`).
"""
