"""A seeded, large, mixed-language corpus for checking token counts against tiktoken's own
``encode``: prose in several scripts, code, JSON, shell, ids, numbers, whitespace runs, emoji
and combining marks, and random code points, cut into texts of the sizes a capsule counts."""
from __future__ import annotations

import json
import random
import uuid

PROSE = {
    "english": "The handoff capsule keeps every open request, the calls already made, and what "
               "is left to do, so the next context continues instead of starting over. ",
    "german": "Die Übergabe behält jede offene Anfrage, die schon ausgeführten Aufrufe und was "
              "noch zu tun bleibt; Größe, Maß und Straße zählen auch. ",
    "french": "L'agent reprend là où il s'était arrêté : aucune requête déjà traitée n'est "
              "refaite, et l'état « en attente » reste tel quel. ",
    "russian": "Агент продолжает с того места, где остановился: уже выполненные запросы не "
               "повторяются, а ожидающие остаются ожидающими. ",
    "greek": "Ο πράκτορας συνεχίζει από εκεί που σταμάτησε· τίποτα δεν επαναλαμβάνεται. ",
    "arabic": "يواصل الوكيل من حيث توقف، ولا يعيد تنفيذ الطلبات التي تمت معالجتها. ",
    "hebrew": "הסוכן ממשיך מהמקום שבו עצר ואינו חוזר על בקשות שכבר טופלו. ",
    "hindi": "एजेंट वहीं से जारी रखता है जहाँ वह रुका था, पहले से संभाले गए अनुरोध दोबारा नहीं। ",
    "chinese": "代理从停止的地方继续，已处理的请求不会重复执行，待处理的请求保持待处理。",
    "japanese": "エージェントは中断したところから再開し、処理済みの依頼を繰り返しません。",
    "korean": "에이전트는 멈춘 곳에서 계속하며 이미 처리된 요청을 반복하지 않습니다. ",
    "thai": "เอเจนต์ทำงานต่อจากจุดที่หยุดไว้ และไม่ทำคำขอที่จัดการแล้วซ้ำ ",
    "vietnamese": "Tác nhân tiếp tục từ chỗ đã dừng và không lặp lại các yêu cầu đã xử lý. ",
}
CODE = [
    "def fold(events, state=None):\n    state = state or ThreadState()\n    for e in events:\n"
    "        apply(state, e)\n    return state\n",
    "fn main() -> Result<(), Box<dyn Error>> {\n    let v: Vec<u64> = (0..10).map(|x| x * x).collect();\n"
    "    println!(\"{:?}\", v);\n    Ok(())\n}\n",
    "const fetchPages = async (url) => {\n  const res = await fetch(`${url}?page=${n}`);\n"
    "  return res.ok ? res.json() : Promise.reject(res.status);\n};\n",
    "#include <stdio.h>\nint main(int argc, char **argv) { printf(\"%d\\n\", argc << 2); return 0; }\n",
    "SELECT seq, type, data FROM events WHERE thread_key = ? AND seq > ? ORDER BY seq LIMIT 500;\n",
    "func (s *Store) Append(ctx context.Context, e Event) error {\n\tif err := s.db.Ping(); err != nil {\n"
    "\t\treturn fmt.Errorf(\"append: %w\", err)\n\t}\n\treturn nil\n}\n",
]
SHELL = [
    "git -c core.hooksPath=/dev/null diff --stat HEAD~3 -- src/ | tail -n 5",
    "find . -name '*.py' -newer setup.cfg -exec grep -l 'TODO' {} + | xargs -r wc -l",
    "pytest -q -x -p no:cacheprovider tests/test_store.py::test_append 2>&1 | tee /tmp/out.log",
    "echo \"$HOME/.local/state/continuation\" && ls -la ~/.codex/sessions/2026/12/03/",
    "awk -F'\\t' '{s+=$3} END {printf \"%.2f\\n\", s/NR}' data.tsv",
]
EXTRA = ["😀🚀👩‍💻🏳️‍🌈", "é" + "\u0301" * 3 + "ñ\u0303", "\u200b\u200d\ufeff", "ｆｕｌｌｗｉｄｔｈ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
         "\t\t  \n\n\n    \r\n", " " * 37, "0" * 29 + "123456789" * 7, "3.14159265358979323846e-10",
         "<|endoftext|> <|fim_prefix|>", "ﷺ ﷽", "ᚠᛇᚻ᛫ᛒᛦᚦ", "ⅫⅣ½¾∑∫√∞≠≈"]


def _random_code_points(rng: random.Random, n: int) -> str:
    out = []
    while len(out) < n:
        cp = rng.choice((rng.randrange(0x20, 0x7F), rng.randrange(0xA0, 0x3000),
                         rng.randrange(0x3000, 0xA000), rng.randrange(0x10000, 0x1FAFF)))
        if not 0xD800 <= cp <= 0xDFFF:
            out.append(chr(cp))
    return "".join(out)


def _piece(rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice(list(PROSE.values())) * rng.randint(1, 4)
    if kind == 1:
        return rng.choice(CODE)
    if kind == 2:
        return "$ " + rng.choice(SHELL) + "\n"
    if kind == 3:
        return json.dumps({"call_id": f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}",
                           "tool": "Bash", "args": {"command": rng.choice(SHELL)},
                           "id": str(uuid.UUID(int=rng.getrandbits(128))),
                           "exit": rng.randint(0, 255), "ok": rng.random() < 0.8},
                          ensure_ascii=rng.random() < 0.5)
    if kind == 4:
        return " ".join(f"{rng.getrandbits(160):040x}" for _ in range(rng.randint(1, 4)))
    if kind == 5:
        return rng.choice(EXTRA) * rng.randint(1, 6)
    if kind == 6:
        return _random_code_points(rng, rng.randint(5, 200))
    return "#%d $ %s\n" % (rng.randint(1, 5000), rng.choice(SHELL))


def corpus(total_chars: int = 1_000_000, seed: int = 20261203) -> list[str]:
    """Texts of 1 to ~16,000 characters, ``total_chars`` in all, the same for a seed."""
    rng = random.Random(seed)
    texts, size = [], 0
    while size < total_chars:
        want = rng.choice((rng.randint(1, 80), rng.randint(80, 2000), rng.randint(2000, 16000)))
        parts, n = [], 0
        while n < want:
            parts.append(_piece(rng))
            n += len(parts[-1])
        text = "".join(parts)[:want]
        texts.append(text)
        size += len(text)
    return texts
