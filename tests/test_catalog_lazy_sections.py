"""A catalogue read from its compiled copy unpickles each section on first use; that stays correct
when two threads (the API's request workers) ask for the same section at once."""

import pickle
import threading

from inferplan.catalog import loader


def test_a_section_asked_for_while_another_thread_reads_it_is_there(catalog, monkeypatch):
    lazy = pickle.loads(pickle.dumps(catalog))
    real = loader.loads_paused
    seen = []

    def read_in_another_thread_meanwhile(data):
        if not seen:
            seen.append("first")
            def other():
                try:
                    seen.append(len(lazy.models.records))
                except AttributeError as exc:
                    seen.append(f"AttributeError: {exc}")
            worker = threading.Thread(target=other)
            worker.start()
            worker.join(timeout=5)
        return real(data)

    monkeypatch.setattr(loader, "loads_paused", read_in_another_thread_meanwhile)
    assert len(lazy.models.records) == len(catalog.models.records)
    assert seen[1:] == [len(catalog.models.records)]
    assert lazy.models is lazy.models  # read once, then kept


def test_a_catalogue_pickled_twice_or_copied_keeps_every_section(catalog):
    import copy

    twice = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(catalog))))
    assert twice == catalog
    assert copy.copy(twice).engines.records.keys() == catalog.engines.records.keys()
    assert not hasattr(twice, "no_such_section")
