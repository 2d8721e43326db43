"""Block Kit rendering: data in, Slack messages out, every one checked against Slack's limits.

Handlers return data (findings, snapshots, plans) and call these; the work lives in
``blocks`` (primitives, limits, pagination), ``findings`` (findings,
incidents, ``health``), ``cluster`` (OSDs, pools, cache tiers, rings) and
``runs`` (check runs, audit rows, plans). This module is the one name importers use.
"""

from __future__ import annotations

from bot.render.cluster import (
    cache_reply,
    osd_reply,
    osd_tree_reply,
    pools_reply,
    ring_reply,
    server_lines,
)
from bot.render.findings import (
    SEV_ICON,
    SEV_TITLE,
    VERDICT_ICON,
    IncidentTokenFn,
    TokenFn,
    all_clusters_reply,
    evidence_line,
    finding_blocks,
    findings_reply,
    health_reply,
    incident_blocks,
)
from bot.render.runs import (
    history_reply,
    mute_line,
    mutes_reply,
    plan_closed_blocks,
    plan_reply,
    rows_reply,
    ttl_words,
)
from core.slack.blocks import (
    MAX_ACTION_VALUE,
    MAX_BLOCKS,
    MAX_BUTTON_TEXT,
    MAX_CONTEXT_ELEMENTS,
    MAX_HEADER,
    MAX_MESSAGES,
    MAX_SECTION,
    MAX_TEXT,
    Block,
    LimitError,
    Message,
    Reply,
    Upload,
    blocks_to_text,
    button,
    clip,
    context,
    divider,
    error_reply,
    esc,
    header,
    help_reply,
    paginate,
    section,
    sections_of,
    text_reply,
    validate_blocks,
    validate_message,
)

__all__ = [
    "MAX_ACTION_VALUE", "MAX_BLOCKS", "MAX_BUTTON_TEXT", "MAX_CONTEXT_ELEMENTS", "MAX_HEADER",
    "MAX_MESSAGES", "MAX_SECTION", "MAX_TEXT", "SEV_ICON", "SEV_TITLE", "VERDICT_ICON",
    "Block", "IncidentTokenFn", "LimitError", "Message", "Reply", "TokenFn", "Upload",
    "all_clusters_reply", "blocks_to_text", "button", "cache_reply", "clip", "context",
    "divider", "error_reply", "esc", "evidence_line", "finding_blocks", "findings_reply",
    "header", "health_reply", "help_reply", "history_reply", "incident_blocks",
    "osd_reply", "osd_tree_reply", "paginate", "plan_closed_blocks", "plan_reply",
    "mute_line", "mutes_reply", "pools_reply", "ring_reply", "rows_reply", "section", "sections_of", "server_lines",
    "text_reply", "ttl_words", "validate_blocks", "validate_message",
]
