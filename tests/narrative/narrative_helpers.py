"""Narratives for the import tests, and a fake LLM server (a real HTTP server on 127.0.0.1
speaking the chat-completions wire format) whose answers a test scripts per story."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vsb.narrative.answer import scenes_of_prompt
from vsb.narrative.reader import read_story
from vsb.validation.sim_judge import serve_json

#: A short narrative in vsb's sentence shapes: Bo leaves in scene 2, the umbrella breaks in 3.
PARK = (
    "In the park, in the morning; the weather is clear. Ama has light skin and short black "
    "hair, wears a red top, blue trousers and a hat, and is standing. Bo has dark skin "
    "and long blond hair, wears a green top, navy trousers and no accessory, and is "
    "standing. A red umbrella, which is closed, is in Ama's hands. From left to right: Ama, Bo.",
    "In the park. Bo leaves. Ama is here.",
    "In the park. A gust of wind catches the umbrella, so the umbrella is broken now. Ama is here.",
)
#: Another: a lantern lit in the kitchen.
KITCHEN = (
    "In the kitchen, at night; the weather is rainy. Kai has medium-dark skin and grey hair "
    "in a bun, wears a yellow top, teal trousers and glasses, and is sitting. A blue lantern, "
    "which is unlit, is on the ground.",
    "In the kitchen. Kai lights the lantern with a match, so the lantern is lit now. Kai is here.",
    "In the kitchen. Kai is waving now.",
)

Answerer = Callable[[list[str], str], str]


def careful(scenes: list[str], prompt: str) -> str:
    """The careful reader's answer."""
    return json.dumps(read_story(scenes))


def answer_doc(scenes: list[str]) -> dict[str, Any]:
    """The careful reader's answer as a document to spoil."""
    return read_story(scenes)


@contextmanager
def llm_server(answer: Answerer) -> Iterator[tuple[str, list[str]]]:
    """``(base_url, prompts)``: every request's user prompt is appended to ``prompts``; the
    reply is ``answer(scenes, prompt)``."""
    prompts: list[str] = []

    def handle(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        content = body["messages"][-1]["content"]
        prompt = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        prompts.append(prompt)
        text = answer(scenes_of_prompt(prompt), prompt)
        return 200, {"choices": [{"message": {"content": text}}]}

    server = serve_json(handle)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", prompts
    finally:
        server.shutdown()
        server.server_close()


def write_txt(folder: Path, name: str, scenes: tuple[str, ...]) -> Path:
    """A plain-text narrative, one paragraph per scene."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.txt"
    path.write_text("\n\n".join(scenes) + "\n")
    return path
