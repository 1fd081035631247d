"""Retry classification and backoff, and the per-run rate limiter, on a fake clock."""

import json

import httpx
import openai
import pytest

from agentgym.llm.ratelimit import RateLimiter
from agentgym.llm.retry import RetryPolicy, backoff_delays, call_with_retries, is_retryable


def _status_error(code: int) -> openai.APIStatusError:
    response = httpx.Response(code, request=httpx.Request("POST", "http://x/v1/chat/completions"))
    return openai.APIStatusError("boom", response=response, body=None)


@pytest.mark.parametrize(
    "code, retry",
    [(429, True), (500, True), (503, True), (408, True), (400, False), (401, False), (404, False)],
)
def test_status_codes(code, retry):
    assert is_retryable(_status_error(code)) is retry


def test_transport_errors_are_retryable():
    request = httpx.Request("POST", "http://x")
    assert is_retryable(openai.APITimeoutError(request=request))
    assert is_retryable(openai.APIConnectionError(request=request))
    assert is_retryable(json.JSONDecodeError("bad", "{", 1))
    assert not is_retryable(ValueError("our own bug"))


def test_backoff_grows_with_full_jitter_and_stops():
    policy = RetryPolicy(max_attempts=5, initial_backoff_s=1.0, max_backoff_s=4.0)
    delays = list(backoff_delays(policy))
    assert len(delays) == 4 and all(
        0 <= d <= cap for d, cap in zip(delays, [1, 2, 4, 4], strict=True)
    )


def test_call_with_retries_succeeds_after_transient_failures():
    failures = [_status_error(429), _status_error(502)]
    slept: list[float] = []

    def flaky():
        if failures:
            raise failures.pop(0)
        return "ok"

    assert call_with_retries(flaky, RetryPolicy(), sleep=slept.append) == "ok" and len(slept) == 2


def test_call_with_retries_gives_up():
    def always():
        raise _status_error(500)

    with pytest.raises(openai.APIStatusError):
        call_with_retries(always, RetryPolicy(max_attempts=3), sleep=lambda s: None)
    with pytest.raises(openai.APIStatusError):  # non-retryable: no second call
        call_with_retries(
            lambda: (_ for _ in ()).throw(_status_error(400)), RetryPolicy(), sleep=pytest.fail
        )


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def test_requests_per_minute():
    clock = FakeClock()
    limiter = RateLimiter(requests_per_minute=3, clock=clock, sleep=clock.sleep)
    for _ in range(7):
        limiter.acquire()
    assert clock.now == pytest.approx(120.0)  # 3 per minute: the 4th and 7th waited a minute each


def test_tokens_per_minute():
    clock = FakeClock()
    limiter = RateLimiter(tokens_per_minute=1000, clock=clock, sleep=clock.sleep)
    limiter.acquire(600)
    limiter.acquire(300)
    assert clock.now == 0.0
    limiter.acquire(500)  # 1,400 > 1,000: waits until the first 600 leave the window
    assert clock.now == pytest.approx(60.0)
