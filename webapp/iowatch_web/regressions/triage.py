"""Triage: one regression moves from one state to another, logged with its user.

The API (POST /api/v1/regressions/{id}/triage) and the dashboard's form both
call this, so the state change and its log are written in one place."""
from __future__ import annotations

from django.db import transaction

from iowatch_web.regressions.models import STATES, Regression, TriageEvent


# A note is a few lines of text a person writes; longer is pasted by mistake
# (and a 5,000-character one made the regression page 52,650 px wide). The
# form's maxlength and the API's maxLength are this number.
MAX_NOTE = 2_000


class TriageRefused(ValueError):
    """A triage the store cannot take; `where` names the field."""
    where = "body field state"


class UnknownState(TriageRefused):
    pass


class BadNote(TriageRefused):
    where = "body field note"


class NoBisectBehind(TriageRefused):
    pass


def _check_note(note: str) -> None:
    if len(note) > MAX_NOTE:
        raise BadNote(f"note: {len(note):,} characters; a note holds at most {MAX_NOTE:,}")
    if "\x00" in note:
        raise BadNote("the note holds a NUL character, which the store cannot keep")
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        raise BadNote("the note holds a lone surrogate (not UTF-8 text)") from None


def triage(regression_id: int, user, state: str, note: str = "") -> Regression:
    """Set the state (and the latest note, when one is given; "bisecting"
    queues a bisect job); raises
    UnknownState for a state outside STATES, NoBisectBehind for "bisected"
    without a finished bisect, BadNote for a note the store cannot
    keep, Http404 for an unknown regression."""
    if state not in STATES:
        raise UnknownState(f"state {state!r} is not one of {', '.join(STATES)}")
    _check_note(note)
    with transaction.atomic():
        # The API's words for a 404 ("no regression 123"), on the page as in the API.
        from iowatch_web.site.api import found
        regression = found(Regression.objects.select_for_update(), "regression", pk=regression_id)
        if state == "bisected" and not regression.bisects.filter(state="done").exists():
            # "bisected" says a bisect found the commit; only a finished bisect sets it.
            raise NoBisectBehind(f"regression #{regression.pk} has no finished bisect: "
                                 "\"bisected\" is set by its bisect when it finds the commit; "
                                 "choose \"bisecting\" to queue one")
        TriageEvent.objects.create(regression=regression, user=user,
                                   from_state=regression.state, to_state=state, note=note)
        regression.state = state
        if note:
            regression.notes = note
        regression.save(update_fields=["state", "notes", "updated"])
        if state == "bisecting":
            # Marking it "bisecting" queues the bisect agents claim (kept if one is open).
            from iowatch_web.regressions.nightly import NoCell, queue_bisect
            try:
                queue_bisect(regression, origin="maintainer", user=user)
            except NoCell as e:  # the transaction is undone: the state stays
                raise TriageRefused(str(e)) from None
    return regression


# A bisect moves its regression: claimed -> "bisecting", done -> "bisected",
# failed -> back to where it was before the bisect. States a person chose that
# say the regression needs no bisect (fixed, invalid, won't fix) are left alone.
BISECT_MAY_MOVE = ("new", "acknowledged", "bisecting")


def _moved_by_agent(regression: Regression, agent, state: str, note: str) -> None:
    TriageEvent.objects.create(regression=regression, agent=agent,
                               from_state=regression.state, to_state=state, note=note)
    regression.state = state
    regression.notes = note
    regression.save(update_fields=["state", "notes", "updated"])


def bisect_claimed(job) -> None:
    """An agent took the regression's bisect: it is now "bisecting"."""
    regression = Regression.objects.select_for_update().get(pk=job.regression_id)
    if regression.state in BISECT_MAY_MOVE and regression.state != "bisecting":
        _moved_by_agent(regression, job.agent, "bisecting",
                        f"bisect #{job.pk} taken by agent {job.agent}"
                        + (f" on {job.agent_host}" if job.agent_host else ""))


def bisect_finished(job) -> None:
    """The regression's bisect posted its result: "bisected" with the commit it
    found, or, when it failed, back to the state it had before the bisect."""
    regression = Regression.objects.select_for_update().get(pk=job.regression_id)
    if regression.state not in BISECT_MAY_MOVE:
        return
    if job.state == "done":
        result = job.result or {}
        first_bad = result.get("first_bad")
        found = (f"first bad commit {first_bad['commit'][:12]} ({first_bad.get('subject', '')})"
                 if first_bad else "the first bad commit is one of "
                 + ", ".join(c[:12] for c in result.get("candidates", [])))
        if result.get("probability") is not None:
            found += f", probability {result['probability']:.1%}"
        _moved_by_agent(regression, job.agent, "bisected", f"bisect #{job.pk}: {found}")
    elif regression.state == "bisecting":  # failed or cancelled
        before = (regression.events.filter(to_state="bisecting").exclude(from_state="bisecting")
                  .order_by("-at", "-id").values_list("from_state", flat=True).first()) or "new"
        _moved_by_agent(regression, job.agent, before,
                        f"bisect #{job.pk} {job.state}: {(job.error or '')[:500]}")
