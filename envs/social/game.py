"""The episode engine shared by the parallel env and the single-agent wrapper.

Turns are round-robin as in Sotopia's experiments: on turn ``t`` seat ``t % 2`` acts and the
other's action is ignored. A turn's action is parsed (:mod:`.actions`); in verifiable scenarios
``action`` arguments may be negotiation moves (:mod:`.moves`). The episode ends when the turn
limit is reached, when an agent leaves, or after more than ``max_stale_turns`` consecutive
``none`` turns (a malformed action counts as ``none``, as a failed parse does in Sotopia).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentgym.envs.social.actions import ActionError, AgentAction, parse_agent_action
from agentgym.envs.social.config import SocialConfig
from agentgym.envs.social.moves import Move, MoveError, parse_move, render_move
from agentgym.envs.social.negotiation import ItemDeal, PriceDeal


@dataclass(frozen=True)
class Event:
    """One turn of the conversation."""

    turn: int
    seat: int
    action: AgentAction
    valid: bool = True
    note: str = ""
    """What was wrong with the action (for invalid ones) or what the move did."""
    move: Move | None = None


@dataclass
class GameState:
    """Everything that changes during an episode (snapshots copy exactly this)."""

    turn: int = 0
    events: list[Event] = field(default_factory=list)
    stale: int = 0
    """Consecutive ``none`` turns."""
    left: int | None = None
    """Seat that left the conversation."""
    standing: list[Move | None] = field(default_factory=lambda: [None, None])
    """Each seat's latest proposal or offer, until it is accepted or rejected."""
    offers_made: list[list[Move]] = field(default_factory=lambda: [[], []])
    agreement: Move | None = None
    proposer: int | None = None
    """Seat whose proposal was accepted."""
    done: bool = False
    end_reason: str = ""

    @property
    def acting(self) -> int:
        """Seat whose turn it is."""
        return self.turn % 2


def play_turn(state: GameState, config: SocialConfig, text: str) -> Event:
    """Apply the acting seat's text, record the event, advance the turn and check the end."""
    seat = state.acting
    try:
        action = parse_agent_action(text)
        event = _apply(state, config, seat, action)
    except ActionError as e:
        event = Event(state.turn, seat, AgentAction("none"), valid=False, note=str(e))
    state.events.append(event)
    state.stale = state.stale + 1 if event.action.action_type == "none" else 0
    state.turn += 1
    _check_end(state, config)
    return event


def _apply(state: GameState, config: SocialConfig, seat: int, action: AgentAction) -> Event:
    if action.action_type == "leave":
        state.left = seat
    if action.action_type != "action" or config.deal is None:
        return Event(state.turn, seat, action)
    try:
        move = parse_move(action.argument, config.deal)
    except MoveError as e:
        return Event(state.turn, seat, action, valid=False, note=str(e))
    if move is None:
        return Event(state.turn, seat, action)
    note = _negotiate(state, config.deal, seat, move)
    if note.startswith("Invalid"):
        return Event(state.turn, seat, action, valid=False, note=note)
    canonical = AgentAction("action", render_move(move, config.deal))
    return Event(state.turn, seat, canonical, note=note, move=move)


def _negotiate(state: GameState, deal: ItemDeal | PriceDeal, seat: int, move: Move) -> str:
    """Update the deal; return what happened ("Invalid ..." if the move cannot apply)."""
    other = 1 - seat
    if state.agreement is not None:
        return "Invalid move: a deal is already agreed; speak, or leave the conversation."
    if move.kind in ("accept", "reject") and state.standing[other] is None:
        return f"Invalid move: there is no open proposal from the other side to {move.kind}."
    if move.kind == "accept":
        state.agreement, state.proposer = state.standing[other], other
        state.standing = [None, None]
        return "Deal agreed."
    if move.kind == "reject":
        state.standing[other] = None
        return "Proposal rejected."
    state.standing[seat] = move
    state.offers_made[seat].append(move)
    return "Proposal on the table."


def _check_end(state: GameState, config: SocialConfig) -> None:
    if state.left is not None:
        state.done, state.end_reason = True, f"seat {state.left} left the conversation"
    elif state.stale > config.max_stale_turns:
        state.done, state.end_reason = True, f"more than {config.max_stale_turns} turns of none"
    elif state.turn >= config.max_turns:
        state.done, state.end_reason = True, f"the turn limit ({config.max_turns}) was reached"


# ---------------------------------------------------------------------------- deal values
def share_of(deal: ItemDeal, move: Move, proposer: int, seat: int) -> dict[str, int]:
    """Units ``seat`` gets if ``proposer``'s proposal ``move`` is carried out."""
    taken = dict(move.share)
    return taken if seat == proposer else deal.rest(taken)


def utility(deal: ItemDeal | PriceDeal, move: Move, proposer: int, seat: int) -> float:
    """0..1 value to ``seat`` of ``proposer``'s move if it became the deal."""
    if isinstance(deal, ItemDeal):
        return deal.points(seat, share_of(deal, move, proposer, seat)) / deal.max_points(seat)
    assert move.price is not None
    return deal.utility(seat, move.price)


def agreed_utility(state: GameState, config: SocialConfig, seat: int) -> float | None:
    """0..1 value of the agreed deal to ``seat``; None while there is no agreement."""
    if state.agreement is None or config.deal is None or state.proposer is None:
        return None
    return utility(config.deal, state.agreement, state.proposer, seat)


def open_offer_utility(state: GameState, config: SocialConfig, seat: int) -> float | None:
    """0..1 value to ``seat`` of the other side's open proposal (what accepting would give)."""
    other = 1 - seat
    move = state.standing[other]
    if move is None or config.deal is None:
        return None
    return utility(config.deal, move, other, seat)
