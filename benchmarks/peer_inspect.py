"""The peer row of issue 20: Inspect AI doing the same shape of offline work as a replayed portagent run.

Each sample: one model turn that calls one tool, the tool runs, one model turn that answers, a scorer
checks the answer; the model is Inspect's ``mockllm`` (no network), samples run one at a time
(``max_samples=1``, like portagent's one worker) and Inspect writes its eval log as portagent writes
its results. The figure is the marginal cost of a sample: ``(eval of N samples − eval of 1) / (N − 1)``
in one warm process, so start-up and per-eval fixed costs are left out on this side as ``speed.py``
leaves them out on portagent's.

Run by an interpreter that has ``inspect-ai`` (it is not a portagent dependency; keep it out of the
test virtualenv, it brings boto3, which vcrpy would then patch):

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install inspect-ai
    python benchmarks/speed.py --peer-python /tmp/peer/bin/python

Prints one JSON list: ms per sample, one figure per repeat.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=56)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="few samples (CI smoke)")
    args = ap.parse_args()
    if args.quick:
        args.samples, args.repeats = 12, 1
    try:
        from inspect_ai import Task, eval
    except ImportError:  # the test venv (and CI) has no inspect-ai, by design: see the docstring
        print("inspect-ai is not installed in this Python: no peer figure (see benchmarks/peer_inspect.py)")
        return
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageTool, ModelOutput, get_model
    from inspect_ai.model._providers.mockllm import MockLLM
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    async def estimate(self: Any, text: str) -> int:
        return len(text) // 4

    # Inspect counts tokens with tiktoken, which downloads its vocabulary on first use: offline that
    # fails the sample. Counting chars/4 instead is cheaper than tiktoken, so if anything it flatters
    # the peer's figure.
    MockLLM.count_text_tokens = estimate  # type: ignore[method-assign]

    @tool
    def get_student_record() -> Any:
        async def execute(case_id: str) -> str:
            """Read one student's case file.

            Args:
                case_id: The case id, like EXP-42.
            """
            return json.dumps({"case_id": case_id, "status": "open", "missing": ["transcript"]})

        return execute

    def answer(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
        if messages and isinstance(messages[-1], ChatMessageTool):
            return ModelOutput.from_content(model="mockllm", content="The transcript is missing.")
        return ModelOutput.for_tool_call(
            model="mockllm", tool_name="get_student_record", tool_arguments={"case_id": "EXP-42"}
        )

    def task(n: int) -> Task:
        return Task(
            dataset=[
                Sample(input=f"Case EXP-42 ({i}): what is missing?", target="transcript") for i in range(n)
            ],
            solver=[use_tools(get_student_record()), generate()],
            scorer=includes(),
        )

    def timed(n: int, log_dir: str) -> float:
        model = get_model("mockllm/model", custom_outputs=answer)
        t0 = time.perf_counter()
        logs = eval(task(n), model=model, log_dir=log_dir, display="none", max_samples=1, log_level="error")
        took = time.perf_counter() - t0
        log = logs[0]
        calls = [m for s in log.samples or [] for m in s.messages if isinstance(m, ChatMessageTool)]
        if log.status != "success" or len(calls) != n:  # a failed sample is cheap: it must not count
            reason = log.error.message if log.error else f"{len(calls)} tool calls for {n} samples"
            raise SystemExit(f"the Inspect eval did not do the work ({log.status}): {reason}")
        return took

    out = []
    with tempfile.TemporaryDirectory() as logs:
        timed(2, logs)  # warm: imports and first-use costs
        for _ in range(args.repeats):
            one = timed(1, logs)
            many = timed(args.samples, logs)
            out.append((many - one) / (args.samples - 1) * 1000)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
