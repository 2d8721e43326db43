"""Slack's Block Kit, within its limits: the primitives every bot message is built from.

This is the only place that knows what Slack can display. Long answers are split into
several messages (50 blocks, 3000 characters per section) and, past a few messages,
uploaded as a text file instead, so a message Slack would reject is never sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checks.model import Severity

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_BUTTON_TEXT = 75
MAX_ACTION_VALUE = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_TEXT = 3000  # fallback text we send (Slack truncates past 40k; keep notifications short)
MAX_MESSAGES = 4  # more than this becomes a file upload

Block = dict[str, Any]


class LimitError(ValueError):
    """A message that Slack would reject; raised before anything is sent."""


@dataclass
class Message:
    text: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Upload:
    filename: str
    content: str
    title: str
    comment: str


@dataclass
class Reply:
    """What a command answers: messages in order, or a file when too long for messages."""

    messages: list[Message]
    upload: Upload | None = None
    ephemeral: bool = False


# --------------------------------------------------------------------------- primitives


def esc(s: str) -> str:
    """Escape the three characters Slack mrkdwn treats as control characters."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER),
                                       "emoji": True}}


def section(text: str, accessory: Block | None = None) -> Block:
    b: Block = {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, MAX_SECTION)}}
    if accessory:
        b["accessory"] = accessory
    return b


def context(*texts: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(t, MAX_SECTION)}
                                            for t in texts[:MAX_CONTEXT_ELEMENTS]]}


def divider() -> Block:
    return {"type": "divider"}


def button(text: str, action_id: str, value: str, style: str | None = None,
           confirm: Block | None = None) -> Block:
    b: Block = {"type": "button", "action_id": action_id, "value": value,
                "text": {"type": "plain_text", "text": clip(text, MAX_BUTTON_TEXT)}}
    if style:
        b["style"] = style
    if confirm:
        b["confirm"] = confirm
    return b


def sections_of(text: str, limit: int = MAX_SECTION - 20) -> list[Block]:
    """Split long mrkdwn on line boundaries into sections within the character limit."""
    out: list[Block] = []
    cur = ""
    for line in text.splitlines():
        while len(line) > limit:  # one enormous line: hard-split it
            if cur:
                out.append(section(cur))
                cur = ""
            out.append(section(line[:limit]))
            line = line[limit:]
        if len(cur) + len(line) + 1 > limit:
            out.append(section(cur))
            cur = ""
        cur = f"{cur}\n{line}" if cur else line
    if cur:
        out.append(section(cur))
    return out


# --------------------------------------------------------------------------- limits


def validate_blocks(blocks: Sequence[Block]) -> None:
    """Raise ``LimitError`` for anything Slack would refuse (the limits we rely on)."""
    if len(blocks) > MAX_BLOCKS:
        raise LimitError(f"{len(blocks)} blocks (limit {MAX_BLOCKS})")
    for i, b in enumerate(blocks):
        t = b.get("type")
        if t == "header":
            if len(b["text"]["text"]) > MAX_HEADER:
                raise LimitError(f"block {i}: header over {MAX_HEADER} characters")
        elif t == "section":
            txt = b.get("text", {}).get("text", "")
            if not txt or len(txt) > MAX_SECTION:
                raise LimitError(f"block {i}: section text of {len(txt)} characters "
                                 f"(1..{MAX_SECTION})")
            for f in b.get("fields", []):
                if len(f["text"]) > 2000:
                    raise LimitError(f"block {i}: field over 2000 characters")
            if "accessory" in b:
                _validate_element(i, b["accessory"])
        elif t == "context":
            els = b.get("elements", [])
            if not els or len(els) > MAX_CONTEXT_ELEMENTS:
                raise LimitError(f"block {i}: context with {len(els)} elements")
        elif t == "actions":
            els = b.get("elements", [])
            if not els or len(els) > 25:
                raise LimitError(f"block {i}: actions with {len(els)} elements")
            for e in els:
                _validate_element(i, e)
        if len(b.get("block_id", "")) > 255:
            raise LimitError(f"block {i}: block_id over 255 characters")


def _validate_element(i: int, e: Block) -> None:
    if e.get("type") == "button":
        if len(e["text"]["text"]) > MAX_BUTTON_TEXT:
            raise LimitError(f"block {i}: button text over {MAX_BUTTON_TEXT} characters")
        if len(e.get("value", "")) > MAX_ACTION_VALUE:
            raise LimitError(f"block {i}: button value over {MAX_ACTION_VALUE} characters")
        if len(e.get("action_id", "")) > 255:
            raise LimitError(f"block {i}: action_id over 255 characters")


def validate_message(m: Message) -> None:
    if not m.text or len(m.text) > MAX_TEXT:
        raise LimitError(f"message text of {len(m.text)} characters (1..{MAX_TEXT})")
    validate_blocks(m.blocks)


def paginate(title: str, blocks: list[Block], text: str,
             plain: Callable[[], str] | None = None, filename: str = "stordoc.txt") -> Reply:
    """Split blocks into messages of at most 50; too many messages -> one file upload."""
    pages = [blocks[i:i + MAX_BLOCKS] for i in range(0, len(blocks), MAX_BLOCKS)] or [[]]
    if len(pages) > MAX_MESSAGES:
        content = plain() if plain else blocks_to_text(blocks)
        return Reply([Message(clip(text, MAX_TEXT), [
            header(title),
            section(esc(clip(text, 2000)) + "\n_Too long for messages: attached as a file._")])],
            Upload(filename, content, title, clip(text, 1000)))
    msgs = []
    for n, page in enumerate(pages):
        t = text if len(pages) == 1 else f"{text} ({n + 1}/{len(pages)})"
        msgs.append(Message(clip(t, MAX_TEXT), page))
    for m in msgs:
        validate_message(m)
    return Reply(msgs)


def blocks_to_text(blocks: Iterable[Block]) -> str:
    lines: list[str] = []
    for b in blocks:
        if b.get("type") in ("header", "section"):
            lines.append(b["text"]["text"])
        elif b.get("type") == "context":
            lines.extend(e.get("text", "") for e in b["elements"])
    return "\n".join(lines) + "\n"


def text_reply(text: str, ephemeral: bool = False) -> Reply:
    r = paginate("stordoc", sections_of(text), text.splitlines()[0] if text else "stordoc")
    r.ephemeral = ephemeral
    return r


def error_reply(text: str) -> Reply:
    return text_reply(f":warning: {text}", ephemeral=True)


def help_reply(command: str, usage: Mapping[str, str], topic: str | None) -> Reply:
    if topic:
        text = f"`{command} {usage[topic]}`"
    else:
        text = "\n".join(f"`{command} {u}`" for u in usage.values())
        text += ("\nMention me with the same words to use it in a thread. Targets: `osd.N`, "
                 "pool names, `DEVICE@HOST`, ring kinds.")
    r = paginate("stordoc help", [header("stordoc help")] + sections_of(text), "stordoc help")
    r.ephemeral = True
    return r


# ---------------------------------------------------------------- findings

SEV_ICON = {Severity.CRIT: ":red_circle:", Severity.WARN: ":large_orange_circle:",
            Severity.INFO: ":large_blue_circle:"}
SEV_TITLE = {Severity.CRIT: "Critical", Severity.WARN: "Warning", Severity.INFO: "Info"}


def evidence_line(ev: Mapping[str, Any]) -> str:
    """A finding's evidence as one clipped line of scalars: a traceback or nested data
    would drown the message."""
    parts = []
    for k, v in ev.items():
        if k == "traceback" or v is None or isinstance(v, (dict, list, tuple)):
            continue  # nothing known is said by leaving the key out, never as "None"
        parts.append(f"{k}: `{esc(clip(str(v), 120))}`")
    return clip(" · ".join(parts), 1500)
