"""Triage: one regression moves from one state to another, logged with its user.

The API (POST /api/v1/regressions/{id}/triage) and the dashboard's form both
call this, so the state change and its log are written in one place."""
from __future__ import annotations

from django.db import transaction
from django.shortcuts import get_object_or_404

from iowatch_web.regressions.models import STATES, Regression, TriageEvent


# A note is a few lines of text a person writes; longer is pasted by mistake.
MAX_NOTE = 10_000


class TriageRefused(ValueError):
    """A triage the store cannot take; `where` names the field."""
    where = "body field state"


class UnknownState(TriageRefused):
    pass


class BadNote(TriageRefused):
    where = "body field note"


def _check_note(note: str) -> None:
    if len(note) > MAX_NOTE:
        raise BadNote(f"the note has {len(note):,} characters; at most {MAX_NOTE:,}")
    if "\x00" in note:
        raise BadNote("the note holds a NUL character, which the store cannot keep")
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        raise BadNote("the note holds a lone surrogate (not UTF-8 text)") from None


def triage(regression_id: int, user, state: str, note: str = "") -> Regression:
    """Set the state (and the latest note, when one is given; "bisecting"
    queues a bisect job); raises
    UnknownState for a state outside STATES, BadNote for a note the store cannot
    keep, Http404 for an unknown regression."""
    if state not in STATES:
        raise UnknownState(f"state {state!r} is not one of {', '.join(STATES)}")
    _check_note(note)
    with transaction.atomic():
        regression = get_object_or_404(Regression.objects.select_for_update(), pk=regression_id)
        TriageEvent.objects.create(regression=regression, user=user,
                                   from_state=regression.state, to_state=state, note=note)
        regression.state = state
        if note:
            regression.notes = note
        regression.save(update_fields=["state", "notes", "updated"])
        if state == "bisecting":
            # Marking it "bisecting" queues the bisect agents claim (kept if one is open).
            from iowatch_web.regressions.nightly import queue_bisect
            queue_bisect(regression, origin="maintainer", user=user)
    return regression
