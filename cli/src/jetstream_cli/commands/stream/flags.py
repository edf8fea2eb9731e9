"""natscli's addCreateFlags: the flags `stream add` and `stream edit` share, and those only
one of them has."""

from __future__ import annotations

import click

from .._shared import BYTES, DURATION, Decorator, all_of, flag_pair


def create_flags(edit: bool) -> Decorator:
    """natscli's addCreateFlags: the same flags on `add` and `edit` (some only on add)."""
    decorators: list[Decorator] = [
        click.option("--subjects", multiple=True, help="Subjects that are consumed by the stream"),
        click.option("--description", help="Sets a contextual description for the stream"),
        click.option("--compression", type=click.Choice(["none", "s2"]),
                     help="Compression algorithm to use (file storage only)"),
        click.option("--replicas", type=int, default=0,
                     help="When clustered, how many replicas of the data to create"),
        click.option("--tag", multiple=True, help="Place the stream on servers that has specific tags"),
        click.option("--cluster", help="Place the stream on a specific cluster"),
        click.option("--ack/--no-ack", default=True, help="Acknowledge publishes"),
        click.option("--retention", type=click.Choice(["limits", "interest", "workq", "work"]),
                     help="Defines a retention policy (limits, interest, work)"),
        click.option("--discard", type=click.Choice(["new", "old"]),
                     help="Defines the discard policy (new, old)"),
        flag_pair("discard-per-subject",
                  "Sets the 'new' discard policy and applies it to every subject in the stream"),
        click.option("--max-age", type=DURATION, default=None,
                     help="Maximum age of messages to keep"),
        click.option("--max-bytes", type=BYTES, default=None, help="Maximum bytes to keep"),
        click.option("--max-consumers", type=int, default=-1,
                     help="Maximum number of consumers to allow"),
        click.option("--max-msg-size", type=BYTES, default=None,
                     help="Maximum size any 1 message may be"),
        click.option("--max-msgs", type=int, default=0, help="Maximum amount of messages to keep"),
        click.option("--max-msgs-per-subject", type=int, default=0,
                     help="Maximum amount of messages to keep per subject"),
        click.option("--dupe-window", type=DURATION, default=None,
                     help="Duration of the duplicate message tracking window"),
        click.option("--mirror", help="Completely mirror another stream"),
        click.option("--source", multiple=True, metavar="STREAM",
                     help="Source data from other streams, merging into this one"),
        flag_pair("allow-batch", "Allow atomic batch publishing"),
        flag_pair("allow-counter", "Configures the stream as a distributed counter"),
        flag_pair("allow-rollup", "Allows roll-ups to be done by publishing messages with special headers"),
        flag_pair("deny-delete", "Deny messages from being deleted via the API"),
        flag_pair("deny-purge", "Deny entire stream or subject purges via the API"),
        flag_pair("allow-direct", "Allows fast, direct, access to stream data via the direct get API"),
        flag_pair("allow-mirror-direct", "Allows fast, direct, access to stream data via the direct get API on mirrors"),
        click.option("--allow-msg-ttl", is_flag=True, help="Allows per-message TTL handling"),
        flag_pair("allow-schedules", "Allows message schedules"),
        click.option("--subject-del-markers-ttl", type=DURATION, default=None,
                     help="How long delete markers should persist in the stream"),
        click.option("--transform-source", help="Stream subject transform source"),
        click.option("--transform-destination", help="Stream subject transform destination"),
        click.option("--metadata", multiple=True, metavar="META", help="Adds metadata to the stream"),
        click.option("--republish-source", help="Republish messages to --republish-destination"),
        click.option("--republish-destination",
                     help="Republish destination for messages in --republish-source"),
        click.option("--republish-headers", is_flag=True,
                     help="Republish only message headers, no bodies"),
        click.option("-j", "--json", "as_json", is_flag=True, help="Produce JSON output"),
        click.option("--config", type=click.Path(exists=True, dir_okay=False),
                     help="JSON file to read configuration from"),
    ]
    if not edit:
        decorators += [
            click.option("--storage", type=click.Choice(["file", "f", "memory", "m"]),
                         help="Storage backend to use (file, memory)"),
            click.option("--first-sequence", type=int, default=0, help="Sets the starting sequence"),
            click.option("--limit-consumer-inactive", type=DURATION, default=None,
                         help="The maximum Consumer inactive threshold the stream allows"),
            click.option("--limit-consumer-max-pending", type=int, default=0,
                         help="The maximum Consumer Ack Pending the stream Allows"),
            click.option("--output", type=click.Path(dir_okay=False),
                         help="Save configuration instead of creating"),
            click.option("--defaults", is_flag=True, help="Accept default values for all prompts"),
        ]
    else:
        decorators += [
            click.option("--no-mirror", is_flag=True, help="Removes current mirror configuration"),
            click.option("--no-transform", is_flag=True,
                         help="Removes current subject transform configuration"),
            click.option("--no-republish", is_flag=True,
                         help="Removes current republish configuration"),
            click.option("-f", "--force", is_flag=True, help="Force edit without prompting"),
            click.option("--dry-run", is_flag=True,
                         help="Only shows differences, do not edit the stream"),
        ]
    return all_of(decorators)
