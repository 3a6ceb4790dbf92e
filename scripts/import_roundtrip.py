#!/usr/bin/env python3
"""The import round trip: vsb's own default stories, written as plain text, imported again
through a fake LLM on 127.0.0.1, and compared with the originals per requirement type.

The fake is a real HTTP server speaking the OpenAI chat-completions wire format, reached
through the importer's ``openai-compatible`` transport (the VLM judge's). It answers with
what a careful reader of the text extracts (``vsb.narrative.reader``): it sees the request
only, never a story object. That reader knows vsb's sentence shapes, so the figures measure
the importer (extraction answer -> replay -> requirements) and what the text states, not an
LLM's reading.

    scripts/import_roundtrip.py [--out DIR] [--json FILE] [--min 0.98]

Prints agreement per requirement type and per dimension; exit status 1 when a type falls
below ``--min``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from vsb.evaluators.vlm.execute import JudgeOptions
from vsb.evaluators.vlm.transports import default_client
from vsb.generator.generate import generate_suite
from vsb.narrative.answer import scenes_of_prompt
from vsb.narrative.importer import (
    IMPORT_DIR,
    LEDGER_NAME,
    build_llm,
    import_narratives,
    write_import,
)
from vsb.narrative.reader import read_story
from vsb.narrative.roundtrip import Agreement, agreement, story_text
from vsb.narrative.sources import read_narratives
from vsb.validation.sim_judge import serve_json


def prompt_of(body: dict[str, Any]) -> str:
    """The user prompt of a chat-completions request (string or content parts)."""
    messages = body.get("messages") or []
    content = messages[-1].get("content", "") if messages else ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def reply(text: str) -> dict[str, Any]:
    """A chat-completions reply carrying ``text``."""
    usage = {"prompt_tokens": 1000, "completion_tokens": len(text) // 4}
    return {"choices": [{"message": {"role": "assistant", "content": text}}], "usage": usage}


def careful_reader(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The fake LLM: reads the narrative in the request, answers its structured story."""
    if not path.endswith("/chat/completions"):
        return 404, {"error": {"message": f"no route {path}"}}
    return 200, reply(json.dumps(read_story(scenes_of_prompt(prompt_of(body)))))


def run(out: Path, cache: Path) -> Agreement:
    """Write, import through the fake server, compare."""
    originals = generate_suite(0)
    texts = out / "narratives"
    texts.mkdir(parents=True, exist_ok=True)
    for story in originals:
        (texts / f"{story.id}.txt").write_text(story_text(story))
    server = serve_json(careful_reader)
    client = default_client()
    try:
        port = server.server_address[1]
        llm = build_llm(
            "openai-compatible:careful-reader", base_url=f"http://127.0.0.1:{port}/v1",
            client=client,
        )  # fmt: skip
        narratives = read_narratives(sorted(texts.glob("*.txt")))
        suite = out / "suite"
        report, transcript = import_narratives(
            narratives, llm, JudgeOptions(cache_dir=cache),
            ledger_path=suite / IMPORT_DIR / LEDGER_NAME,
        )  # fmt: skip
        write_import(suite, report, transcript, llm.judge_model)
    finally:
        client.close()
        server.shutdown()
        server.server_close()
    for r in report.rejected:
        print(f"rejected {r.narrative.id}: scene {r.scene}: {r.error}", file=sys.stderr)
    return agreement(originals, report.imported)


def figures(a: Agreement) -> dict[str, Any]:
    """The agreement as a JSON document."""
    by_type = {
        t: {"agreed": a.agreed[t], "total": a.total[t], "rate": round(a.rate(t), 4)}
        for t in sorted(a.total)
    }
    by_dimension = {
        d: {
            "agreed": a.agreed_by_dimension[d],
            "total": a.by_dimension[d],
            "rate": round(a.dimension_rate(d), 4),
        }
        for d in sorted(a.by_dimension)
    }
    return {
        "overall": round(a.overall(), 4),
        "by_type": by_type,
        "by_dimension": by_dimension,
        "extra_requirements": a.extra,
        "rejected_stories": a.missing_stories,
        "reader": "knows vsb's sentence shapes (vsb.narrative.reader)",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="keep the narratives and suite here")
    ap.add_argument("--json", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--min", type=float, default=0.98, help="lowest agreement per type")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        a = run(out, Path(tmp) / "cache")
    doc = figures(a)
    print("requirement type   agreed / total   agreement")
    for t, f in doc["by_type"].items():
        print(f"{t:<18} {f['agreed']:>6} / {f['total']:<6}   {f['rate']:.4f}")
    print("dimension          agreed / total   agreement")
    for d, f in doc["by_dimension"].items():
        print(f"{d:<18} {f['agreed']:>6} / {f['total']:<6}   {f['rate']:.4f}")
    print(
        f"overall {doc['overall']:.4f}; requirements no original has: {a.extra}; stories "
        f"rejected: {len(a.missing_stories)} (the reader knows vsb's sentence shapes)"
    )
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    low = [t for t in a.total if a.rate(t) < args.min]
    if low or a.missing_stories:
        print(f"below {args.min}: {', '.join(sorted(low)) or 'none'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
