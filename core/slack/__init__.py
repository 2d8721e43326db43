"""Posting to Slack, for every front end that posts: the bot and ``stordoc watch``.

``blocks`` (Block Kit within Slack's limits), ``redact`` (secrets out of every post and
log line), ``retry`` (slack_sdk's retry handlers, an outage said once, the watch's
backoff), ``store`` (buttons, deduplicated deliveries and the audit, in the journal),
``wsgi`` (what both HTTP gates share), ``poster`` (a Slack client with all of those and
the alert desk: what ``stordoc watch`` posts through, and what the bot holds).
"""
