"""Secret-looking text is found and redacted (continuation/host/secret_text.py): each token
format and each credential format, in plain text and in JSON text, and what is not a secret."""
from __future__ import annotations

import json

import pytest

from continuation.host.secret_text import (CREDENTIAL_FORMATS, TOKEN_FORMATS, find_token, marker,
                                           redact, redact_data)

#: a realistic sample of each token format (none of them a real credential)
TOKENS = {
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
                   "QyNTUxOQAAACDx9v\n-----END OPENSSH PRIVATE KEY-----",
    "AWS access key id": "AKIAIOSFODNN7EXAMPLE",
    "GitHub token": "ghp_" + "a1B2c3D4e5" * 4,
    "GitLab token": "glpat-" + "x1Y2z3W4v5" * 2,
    "Anthropic key": "sk-ant-api03-" + "Zy98Xw76Vu54" * 4,
    "OpenAI key": "sk-proj-" + "Ab12Cd34Ef56" * 4,
    "Slack token": "xoxb-1234567890-abcdefghij",
    "Slack webhook": "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/" + "c" * 24,
    "Google API key": "AIza" + "Sy" + "B" * 33,
    "Stripe key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "npm token": "npm_" + "a1" * 18,
    "PyPI token": "pypi-AgEIcHlwaS5vcmc" + "Q" * 60,
    "Hugging Face token": "hf_" + "abcdefghij" * 4,
    "SendGrid key": "SG." + "a" * 22 + "." + "b" * 43,
    "DigitalOcean token": "dop_v1_" + "0123456789abcdef" * 4,
    "JSON web token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
}
#: kind -> (text holding the credential, the secret in it, what must stay)
CREDENTIALS = {
    "password in a URL": ("git clone https://alice:Hunter2Secret@example.com/r.git",
                          "Hunter2Secret", "https://alice:"),
    "authorization header": ('curl -H "Authorization: Basic YWxpY2U6aHVudGVyMg==" x',
                             "YWxpY2U6aHVudGVyMg==", "Authorization: Basic "),
    "bearer token": ("token is Bearer abcDEF123456ghiJKL789 now", "abcDEF123456ghiJKL789",
                     "Bearer "),
    "secret value": ("export DB_PASSWORD=correct-horse-battery", "correct-horse-battery",
                     "DB_PASSWORD="),
}


def test_every_format_has_a_sample():
    assert set(TOKENS) == set(TOKEN_FORMATS)
    assert set(CREDENTIALS) == set(CREDENTIAL_FORMATS)


@pytest.mark.parametrize("kind", list(TOKENS))
def test_each_token_format_is_found_and_redacted(kind):
    token = TOKENS[kind]
    text = f"before {token} after"
    assert find_token(text) == kind
    shown = redact(text)
    assert shown == f"before {marker(kind)} after"
    assert redact(shown) == shown  # stable


@pytest.mark.parametrize("kind", list(TOKENS))
def test_each_token_format_is_redacted_inside_json_text(kind):
    data = {"command": f"use {TOKENS[kind]}", "n": 1, "nested": [{"out": TOKENS[kind] + "\n"}]}
    for text in (json.dumps(data), json.dumps(data, indent=2, ensure_ascii=False)):
        shown = redact(text)
        assert json.loads(shown) == {"command": f"use {marker(kind)}", "n": 1,
                                     "nested": [{"out": marker(kind) + "\n"}]}


@pytest.mark.parametrize("kind", list(CREDENTIALS))
def test_each_credential_format_is_redacted_keeping_what_names_it(kind):
    text, secret, kept = CREDENTIALS[kind]
    assert find_token(text) is None  # not a token: never decides a file's fate
    shown = redact(text)
    assert secret not in shown and kept in shown and marker(kind) in shown
    assert redact(shown) == shown
    assert json.loads(redact(json.dumps({"t": text}))) == {"t": shown}


def test_a_private_key_is_redacted_whole_even_without_its_last_line():
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n"
    text = f"key:\n-----BEGIN PRIVATE KEY-----\n{body}(cut)"
    assert redact(text) == f"key:\n{marker('private key')}(cut)"
    escaped = json.dumps({"k": f"-----BEGIN RSA PRIVATE KEY-----\n{body}", "next": "v"})
    assert json.loads(redact(escaped)) == {"k": marker("private key"), "next": "v"}


@pytest.mark.parametrize("text", [
    "sk-short and AKIA are not tokens",
    "password = input('password: ')",
    "password=$DB_PASSWORD and token: ${{ secrets.TOKEN }}",
    "max_tokens: 4096, tokens=12345678901",
    "tokenizer: cl100k_base",
    "see https://example.com:8080/path and git@github.com:owner/repo.git",
    "postgresql://me:***@host/db (masked already)",
    "the bearer of bad news",
    "a plain sentence about API keys and passwords",
])
def test_what_is_not_a_secret_is_left_alone(text):
    assert redact(text) == text and find_token(text) is None


def test_redact_data_walks_decoded_json():
    value = {"a": [TOKENS["GitHub token"], 3, None, {"b": "ok"}], TOKENS["npm token"]: True}
    assert redact_data(value) == {"a": [marker("GitHub token"), 3, None, {"b": "ok"}],
                                  marker("npm token"): True}


def test_empty_and_huge_text():
    assert redact("") == ""
    big = ("x" * 1000 + "\n") * 2000 + TOKENS["Stripe key"]
    assert redact(big).endswith(marker("Stripe key"))


def test_every_token_holds_one_of_its_anchors():
    from continuation.host.secret_text import TOKEN_ANCHORS

    assert set(TOKEN_ANCHORS) == set(TOKEN_FORMATS)
    for kind, token in TOKENS.items():
        assert any(a in token for a in TOKEN_ANCHORS[kind]), kind


def test_a_credential_holding_a_known_token_is_named_by_the_token():
    text = f"OPENAI_API_KEY={TOKENS['OpenAI key']} and password=hunter2hunter2"
    assert redact(text) == (f"OPENAI_API_KEY={marker('OpenAI key')} and "
                            f"password={marker('secret value')}")
