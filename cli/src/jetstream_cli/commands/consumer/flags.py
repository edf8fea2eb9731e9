"""The flags `consumer add` and `consumer edit` share, and those only one of them has
(natscli's consumer add / edit flags)."""

from __future__ import annotations

import click

from .._shared import BYTES, DURATION, Decorator, all_of
from .config import UNSET


def create_flags(edit: bool) -> Decorator:
    """The flags of `consumer add` (`edit=False`) or `consumer edit`."""
    decorators: list[Decorator] = [
        click.option("--backoff", type=click.Choice(["linear", "none"]),
                     help="Creates a consumer backoff policy using a specific pre-written "
                          "algorithm (none, linear)"),
        click.option("--backoff-steps", type=int, default=10,
                     help="Number of steps to use when creating the backoff policy"),
        click.option("--backoff-min", type=DURATION, default="1m",
                     help="The shortest backoff period that will be generated"),
        click.option("--backoff-max", type=DURATION, default="20m",
                     help="The longest backoff period that will be generated"),
        click.option("--description", help="Sets a contextual description for the consumer"),
        click.option("--filter", multiple=True, metavar="SUBJECTS",
                     help="Filter Stream by subjects"),
        click.option("--headers-only/--no-headers-only", default=None,
                     help="Deliver only headers and no bodies"),
        click.option("--max-deliver", type=int, default=0,
                     help="Maximum amount of times a message will be delivered"),
        click.option("--max-pending", "--max-outstanding", "max_pending", type=int, default=-1,
                     help="Maximum pending Acks before consumers are paused"),
        click.option("--max-pull-batch", type=int, default=0,
                     help="Maximum size batch size for a pull request to accept"),
        click.option("--max-pull-expire", type=DURATION, default=None,
                     help="Maximum expire duration for a pull request to accept"),
        click.option("--max-pull-bytes", type=BYTES, default=None,
                     help="Maximum max bytes for a pull request to accept"),
        click.option("--sample", type=int, default=-1,
                     help="Percentage of requests to sample for monitoring purposes"),
        click.option("--target", metavar="SUBJECT", help="Push based delivery target subject"),
        click.option("--wait", type=DURATION, default="-1s", help="Acknowledgment waiting time"),
        click.option("--inactive-threshold", type=DURATION, default=None,
                     help="How long to allow an ephemeral consumer to be idle before removing it"),
        click.option("--replicas", type=int, default=0,
                     help="Sets a custom replica count rather than inherit from the stream"),
        click.option("--metadata", multiple=True, metavar="META",
                     help="Adds metadata to the consumer"),
        click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output"),
        click.option("--config", type=click.Path(exists=True, dir_okay=False),
                     help="JSON file to read configuration from"),
    ]
    if not edit:
        decorators += [
            click.option("--ack", type=click.Choice(["none", "all", "explicit", "flow_control"]),
                         help="Acknowledgment policy (none, all, explicit, flow_control)"),
            click.option("--bps", type=int, default=0,
                         help="Restrict message delivery to a certain bit per second"),
            click.option("--deliver", metavar="POLICY",
                         help="Start policy (all, new, last, subject, 1h, msg sequence)"),
            click.option("--deliver-group", default=UNSET, metavar="GROUP",
                         help="Delivers push messages only to subscriptions matching this group"),
            click.option("--ephemeral", is_flag=True, help="Create an ephemeral consumer"),
            click.option("--flow-control", is_flag=True, default=None,
                         help="Enable Push consumer flow control"),
            click.option("--heartbeat", help="Enable idle Push consumer heartbeats (-1 disable)"),
            click.option("--max-waiting", type=int, default=0,
                         help="Maximum number of outstanding pulls allowed"),
            click.option("--pull", is_flag=True, help="Deliver messages in 'pull' mode"),
            click.option("--replay", type=click.Choice(["instant", "original"]),
                         help="Replay Policy (instant, original)"),
            click.option("--memory", is_flag=True,
                         help="Force the consumer state to be stored in memory rather than "
                              "inherit from the stream"),
            click.option("--pause", help="Pause the consumer for a duration after start or "
                                         "until a specific timestamp"),
            click.option("--pinned-groups", multiple=True,
                         help="Create a Pinned Client consumer based on these groups"),
            click.option("--pinned-ttl", type=DURATION, default=None,
                         help="The time to allow for a client to pull before losing the "
                              "pinned status"),
            click.option("--overflow-groups", multiple=True,
                         help="Create a Overflow consumer based on these groups"),
            click.option("--prioritized-groups", multiple=True,
                         help="Create a Prioritized consumer based on these groups"),
            click.option("--output", type=click.Path(dir_okay=False),
                         help="Save configuration instead of creating"),
            click.option("--defaults", is_flag=True, help="Accept default values for all prompts"),
        ]
    else:
        decorators += [
            click.option("-f", "--force", is_flag=True, help="Force edit without prompting"),
            click.option("--dry-run", is_flag=True,
                         help="Only shows differences, do not edit the stream"),
        ]

    return all_of(decorators)
