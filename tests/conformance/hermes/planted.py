"""Seeded generator of conversations with planted secrets, compared with redaction ON on
both sides (cases `secret-NNN`, `"redact": true`; every other case runs with it off, H10).

The conversations are corpus.py's (same shapes, same seeds scheme), with secrets planted
where hermes's redactor meets them: user and assistant text, tool results, list parts, the
fallback's turns, and above all tool-call `arguments`, as plain JSON, as JSON whose string
values hold JSON (escaped once, twice, three times), as non-JSON text, and cut where
hermes shrinks long arguments. The secrets are shapes hermes's redactor knows (vendor
prefixes, `KEY=value`, JSON and YAML fields, headers, URLs with credentials, private key
blocks); none is real.
"""

import json
import os

import corpus

COUNT = int(os.environ.get("HERMES_SECRETS_COUNT", "40"))
SEED = int(os.environ.get("HERMES_SECRETS_SEED", "0x5EC7"), 0)
MIN = 3

# Values a secret field may hold.
VALUES = (
    "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789",
    "ghp_abcdefghijklmnopqrstuvwxyz012345",
    "hunter2-very-secret-value",
    "xoxb-1234567890-abcdefghijklmnop",
    "AKIAIOSFODNN7EXAMPLE",
    "plainSecretValue42",
    "p@ss w0rd",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
)

# Key names around them: JSON field names hermes knows, and ones it does not.
KEYS = ("api_key", "apiKey", "token", "password", "secret", "access_token", "auth_token",
        "client_secret", "note", "value", "Authorization")


class SecretGen(corpus.Gen):
    def secret_text(self):
        r = self.r
        v = r.choice(VALUES)
        k = r.randrange(12)
        if k == 0:
            return f"export OPENAI_API_KEY={v}"
        if k == 1:
            return f"config \"{r.choice(KEYS)}\": \"{v}\""
        if k == 2:
            return f"password: {v}"
        if k == 3:
            return f"Authorization: Bearer {v}"
        if k == 4:
            return f"postgres://admin:{v.replace(' ', '')}@db.example:5432/app"
        if k == 5:
            return f"https://api.example/v1?api_key={v.replace(' ', '')}&page=2"
        if k == 6:
            return f"x-api-key: {v}"
        if k == 7:
            return "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----"
        if k == 8:
            return f"spring.datasource.password={v.replace(' ', '')}"
        if k == 9:
            return json.dumps({r.choice(KEYS): v})
        return v

    def text(self):
        p = self.r.random()
        if p < 0.1:
            # JSON inside a text field: a command or goal that carries a config blob.
            self.tag("secret-text-json")
            return json.dumps(self.nested(self.r.randint(0, 2)), ensure_ascii=self.r.random() < 0.5)
        if p < 0.4:
            self.tag("secret-text")
            t = self.secret_text()
            if self.r.random() < 0.5:
                t = self.words(1, 12) + " " + t + " " + self.words(0, 8)
            return t
        return super().text()

    def nested(self, depth):
        """JSON whose string values hold JSON, `depth` levels deep, a secret at the bottom."""
        inner = {self.r.choice(KEYS): self.r.choice(VALUES)}
        if self.r.random() < 0.5:
            inner = {"note": "config " + json.dumps(inner)[1:-1]}
        for _ in range(depth):
            inner = {self.r.choice(("payload", "body", "note", "data")): json.dumps(inner, ensure_ascii=self.r.random() < 0.5)}
        return inner

    def args(self, name):
        p = self.r.random()
        if p < 0.3:
            depth = self.r.randint(1, 3)
            self.tag("secret-args-nested", f"secret-args-depth-{depth}")
            a = self.nested(depth)
            if self.r.random() < 0.3:
                self.tag("huge-args")
                a["blob"] = self.exact(self.r.choice([501, 1501]))
            return json.dumps(a, ensure_ascii=self.r.random() < 0.3)
        if p < 0.45:
            self.tag("secret-args-flat")
            a = {self.r.choice(KEYS): self.r.choice(VALUES), "command": self.secret_text()}
            return json.dumps(a, separators=(",", ":") if self.r.random() < 0.3 else None)
        if p < 0.5:
            self.tag("secret-args-text")
            return self.secret_text()
        return super().args(name)


REQUIRED = ("secret-text", "secret-text-json", "secret-args-nested", "secret-args-depth-1", "secret-args-depth-2",
            "secret-args-depth-3", "secret-args-flat", "secret-args-text", "fail-auth")


def one(i):
    case = corpus.one(i, gen=SecretGen, seed=SEED, name=f"secret-{i:03d}")
    case["redact"] = True
    return case


def generate():
    cs = [one(i) for i in range(COUNT)]
    counts = {t: sum(t in c["tags"] for c in cs) for t in REQUIRED}
    missing = {t: n for t, n in counts.items() if n < MIN}
    assert not missing, f"secrets corpus misses features: {missing}"
    return cs
