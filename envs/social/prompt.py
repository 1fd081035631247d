"""What each agent sees: Sotopia's background prompt, then the conversation turn by turn."""

from __future__ import annotations

from agentgym.envs.social.actions import FORMAT_HELP
from agentgym.envs.social.config import RELATIONSHIPS, SocialConfig
from agentgym.envs.social.game import Event, GameState
from agentgym.envs.social.moves import move_syntax
from agentgym.envs.social.negotiation import ItemDeal

SYSTEM_PROMPT = (
    "You are role-playing a person in a social interaction with another person. Act and speak as\n"
    "that person would, keeping their social goal in mind, in a natural and realistic way.\n"
    "Each turn, reply with exactly one action as JSON:\n"
    '{"action_type": "speak" | "non-verbal communication" | "action" | "leave" | "none",\n'
    ' "argument": "what you say or do"}\n'
    "In negotiations, agreements are made with action moves (propose / offer / accept / reject)."
)


def background(config: SocialConfig, seat: int) -> str:
    """Sotopia's background for ``seat``: scenario, both profiles as far as known, own goal."""
    me, other = config.agents[seat], config.agents[1 - seat]
    lines = [
        f"Imagine you are {me.name}, your task is to act/speak as {me.name} would, keeping in mind "
        f"{me.name}'s social goal. Note that {me.name}'s goal is only visible to you. You should "
        f"try your best to achieve {me.name}'s goal in a way that aligns with their character "
        "traits. Additionally, maintaining the conversation's naturalness and realism is "
        "essential (e.g., do not repeat what other people have already said before).",
        "",
        "Here is the context of this interaction:",
        f"Scenario: {config.scenario}",
        f"Participants: {config.names[0]} and {config.names[1]}",
        f"{me.name}'s background: {me.self_description()}",
        f"{other.name}'s background: {other.seen_by_other(config.relationship)}",
        f"Relationship: {RELATIONSHIPS[config.relationship].replace('_', ' ')}",
        f"{me.name}'s goal: {config.goals[seat]}",
        f"{other.name}'s goal: Unknown",
        "",
        FORMAT_HELP,
    ]
    if config.deal is not None:
        lines.append(f"Agreements are made with {move_syntax(config.deal)}")
    lines += [
        f"The conversation lasts at most {config.max_turns} turns; {config.names[0]} acts on even "
        f'turns and {config.names[1]} on odd turns. You can "leave" the conversation if you have '
        "achieved your goal, it makes you uncomfortable, you lose interest, or for other reasons.",
    ]
    return "\n".join(lines)


def describe(event: Event, config: SocialConfig, seat: int) -> str:
    """One turn as ``seat`` reads it."""
    who = "You" if event.seat == seat else config.names[event.seat]
    text = f"Turn #{event.turn}: {who} {event.action.to_natural_language()}"
    if event.seat == seat and not event.valid:
        return f"{text}\n(Your action was not valid: {event.note})"
    if event.move is not None:
        return f"{text} ({explain_move(event, config)})"
    return text


def explain_move(event: Event, config: SocialConfig) -> str:
    """What a negotiation move means, in words (who would get what)."""
    move, names = event.move, config.names
    if move is None or not isinstance(config.deal, ItemDeal) or move.kind != "propose":
        return event.note
    mine = dict(move.share)
    rest = config.deal.rest(mine)
    return (
        f"{names[event.seat]} would take {_units(mine)}; {names[1 - event.seat]} would get "
        f"{_units(rest)}. {event.note}"
    )


def _units(share: dict[str, int]) -> str:
    return ", ".join(f"{n} {item}" for item, n in sorted(share.items()) if n) or "nothing"


def turn_prompt(config: SocialConfig, state: GameState, seat: int) -> str:
    """The line that tells ``seat`` what to do now."""
    if state.done:
        return f"The conversation is over: {state.end_reason}."
    if state.acting == seat:
        return f"Turn #{state.turn}: it is your turn, {config.names[seat]}."
    return (
        f"Turn #{state.turn}: it is {config.names[state.acting]}'s turn; your action this turn is "
        'ignored (reply "none").'
    )


def observation(
    config: SocialConfig, state: GameState, seat: int, since: int, first: bool = False
) -> str:
    """Events from index ``since`` on, then the turn prompt (after the background if ``first``)."""
    parts = [background(config, seat)] if first else []
    parts += [describe(e, config, seat) for e in state.events[since:]]
    parts.append(turn_prompt(config, state, seat))
    return "\n".join(p for p in parts if p)


def transcript(config: SocialConfig, state: GameState) -> str:
    """The whole conversation in the third person (for judges)."""
    lines = []
    for e in state.events:
        line = f"Turn #{e.turn}: {config.names[e.seat]} {e.action.to_natural_language()}"
        lines.append(line + (f" ({explain_move(e, config)})" if e.move is not None else ""))
    if state.done:
        lines.append(f"The conversation ended: {state.end_reason}.")
    return "\n".join(lines) or "(no turns yet)"
