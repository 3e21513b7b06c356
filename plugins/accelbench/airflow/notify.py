"""Word when the answer changes: a report that changes an answer card, or a regression the gate finds, is
announced through Airflow's own notifiers (the SMTP provider's `SmtpNotifier`, the Slack provider's
`SlackWebhookNotifier`), on the Airflow connection named in ACCELBENCH_NOTIFY_CONN_ID; its type picks the
notifier. Nothing is sent when that setting is empty or nothing changed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from html import escape
from typing import Any

from accelbench.config import Settings, env_name
from accelbench.errors import ConfigError

log = logging.getLogger(__name__)
CONN_SETTING = env_name("notify_conn_id")
TO_SETTING = env_name("notify_to")
NOTIFIERS = ("smtp", "slackwebhook")  # the connection types a notifier exists for


def _smtp(conn_id: str, subject: str, lines: Sequence[str], link: str) -> Any:
    from airflow.providers.smtp.notifications.smtp import SmtpNotifier

    to = [a.strip() for a in Settings.from_env("notify_to").airflow.notify_to.split(",") if a.strip()]
    if not to:
        raise ConfigError(TO_SETTING, "", f"the addresses an `smtp` connection ({conn_id}) sends to")
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    anchor = f'<a href="{escape(link)}">{escape(link)}</a>'
    html = f"<p>{escape(subject)}</p><ul>{items}</ul><p>Report: {anchor}</p>"
    # The notifier renders its fields as Jinja templates: braces are escaped, so none of ours is read as one.
    html = html.replace("{", "&#123;").replace("}", "&#125;")
    return SmtpNotifier(to=to, smtp_conn_id=conn_id, subject=subject.replace("{", "("), html_content=html)


def _slack(conn_id: str, subject: str, lines: Sequence[str], link: str) -> Any:
    try:
        from airflow.providers.slack.notifications.slack_webhook import (  # type: ignore[import-not-found]
            SlackWebhookNotifier,
        )
    except ImportError:
        raise ConfigError(
            CONN_SETTING, conn_id, "a `slackwebhook` connection needs apache-airflow-providers-slack"
        ) from None
    text = "\n".join([subject, *(f"- {line}" for line in lines), f"Report: {link}"])
    return SlackWebhookNotifier(slack_webhook_conn_id=conn_id, text=text.replace("{", "("))


def announce(subject: str, lines: Sequence[str], link: str, context: dict[str, Any]) -> bool:
    """Send `subject` and `lines` with the report's `link` through the connection ACCELBENCH_NOTIFY_CONN_ID
    names; False (nothing sent) when it is unset or there is nothing to say."""
    conn_id = Settings.from_env("notify_conn_id").airflow.notify_conn_id
    if not conn_id or not lines:
        return False
    from airflow.sdk import BaseHook

    kind = BaseHook.get_connection(conn_id).conn_type or ""
    if kind not in NOTIFIERS:
        raise ConfigError(f"connection {conn_id}.conn_type", kind, f"expected one of {', '.join(NOTIFIERS)}")
    notifier = (_smtp if kind == "smtp" else _slack)(conn_id, subject, lines, link)
    notifier(context)
    log.info("notified through %s (%s): %s", conn_id, kind, subject)
    return True


def report_link(report_id: str, html: str) -> str:
    """Where a reader opens the report: the Benchmarks view under Airflow's [api] base_url when it is set,
    else the page's place in the lake."""
    from airflow.configuration import conf

    from accelbench.airflow.ui_plugin import URL_PREFIX

    base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    return f"{base}{URL_PREFIX}/reports/{report_id}" if base else html
