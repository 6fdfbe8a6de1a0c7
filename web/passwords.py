"""What makes a password acceptable: 8 to 1024 characters, and not easy to guess.

"Easy to guess" is zxcvbn's judgement (Dropbox's estimator, the Python port pinned in pyproject.toml): it
knows the commonest passwords, words, names, keyboard walks, repeats, sequences and dates, and is told the
username, so ``password``, ``12345678``, eight spaces and ``alice1234`` for alice are refused with its own
advice. A score of 2 (about 10^8 guesses) is the least accepted: with the login throttle (``web/throttle.py``,
10 wrong guesses per account per 15 minutes) that is centuries of online guessing, and it still lets a
learner pick a passphrase they can remember.
"""

from __future__ import annotations

from zxcvbn import zxcvbn

PASSWORD_MIN, PASSWORD_MAX = 8, 1024
MIN_SCORE = 2  # zxcvbn's 0..4
ZXCVBN_MAX = 72  # zxcvbn refuses longer input (and is slow on it); a longer password is judged by its start


def password_problem(password: object, username: str = "") -> str | None:
    """Why ``password`` is refused for ``username`` (a sentence for the person choosing it), or None."""
    if not isinstance(password, str) or not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        return f"A password is {PASSWORD_MIN} to {PASSWORD_MAX} characters."
    if not password.strip():
        return "A password cannot be only spaces."
    name = (username or "").strip().lower()
    if name and password.strip().lower() == name:
        return "A password cannot be the username."
    verdict = zxcvbn(password[:ZXCVBN_MAX], user_inputs=[name] if name else [])
    if verdict["score"] >= MIN_SCORE:
        return None
    advice = [verdict["feedback"].get("warning") or "", *verdict["feedback"].get("suggestions", [])]
    hint = " ".join(a.strip() for a in advice if a and a.strip())
    return "That password is too easy to guess. " + (hint or "A few uncommon words together make a good one.")
