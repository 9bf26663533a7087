"""The room benchmarks' prompts (``benchmarks/bench_room.py``, ``benchmarks/bench_room_throughput.py``): distinct
where they must be, the same for a caller whatever the number of callers, the tour's query with ``--same-query``."""

from benchmarks.bench_room import Plan, generation_plans
from benchmarks.bench_room_throughput import LIST_SIZE, caller_prompts
from fairrag_core import load_collection

TOUR = load_collection("running-shoes").queries[0]


def test_the_tour_query_is_rs_q01():
    assert TOUR.query_id == "rs-q01"


def test_generating_sessions_take_their_own_query_or_the_tour_query_at_their_own_stop():
    queries = [q.text for q in load_collection("running-shoes").queries]
    assert generation_plans(3, same_query=False) == [Plan(queries[0]), Plan(queries[1]), Plan(queries[2])]
    assert generation_plans(3, same_query=True) == [Plan(TOUR.text, 0), Plan(TOUR.text, 1), Plan(TOUR.text, 2)]


def test_callers_prompts_are_distinct_and_do_not_depend_on_how_many_callers():
    three = caller_prompts(3, 4, same_query=False, seed=0)
    assert [len(mine) for mine in three] == [4, 4, 4]
    every = [p for mine in three for p in mine]
    assert len(set(every)) == 12
    assert caller_prompts(1, 4, same_query=False, seed=0) == three[:1]
    assert all(p.user.count("\n[") == LIST_SIZE for p in every)  # five numbered documents each
    assert three[1][0].user.endswith(f"Question: {load_collection('running-shoes').queries[1].text}\nAnswer:")


def test_same_query_callers_all_ask_the_tour_query_with_distinct_lists():
    prompts = [p for mine in caller_prompts(2, 3, same_query=True, seed=0) for p in mine]
    assert len(set(prompts)) == 6
    assert {p.user.rsplit("Question: ", 1)[1] for p in prompts} == {f"{TOUR.text}\nAnswer:"}
