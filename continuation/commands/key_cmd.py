"""``key init | status | rotate | disable``: encryption at rest (docs/encryption.md).

``init`` makes a key (or takes ``$CONTINUATION_KEY``), keeps it outside the store (a 0600 key
file, by default ``~/.config/continuation/key``, or the OS keyring with ``--keyring``) and
seals every row of the store and every file of ``contexts/`` and ``handoff/`` under it.
``rotate`` seals everything again under a new key: the new key is kept beside the old one
(``<key file>.next``, the keyring's ``key.next``, or ``$CONTINUATION_KEY_NEXT`` that you set)
until the store and the files are sealed under it, then it replaces the old one; a rotation cut
short is finished by running it again. ``disable`` opens everything back into clear.
"""
from __future__ import annotations

import sys

from continuation.commands import CommandError, add_json_arg, open_engine
from continuation.commands.output import emit_json


def register(sub) -> None:
    p = sub.add_parser("key", help="encryption at rest: key init, status, rotate, disable")
    key_sub = p.add_subparsers(dest="key_command", metavar="ACTION")
    init = key_sub.add_parser("init", help="make a key and encrypt the store and its files")
    where = init.add_mutually_exclusive_group()
    where.add_argument("--keyring", action="store_true",
                       help="keep the key in the OS keyring (the `keyring` package)")
    where.add_argument("--key-file", help="keep the key in this file (default: "
                                          "$CONTINUATION_KEY_FILE or ~/.config/continuation/key)")
    add_json_arg(init)
    init.set_defaults(func=cmd_init)
    status = key_sub.add_parser("status", help="is the store encrypted, and is its key here")
    add_json_arg(status)
    status.set_defaults(func=cmd_status)
    rotate = key_sub.add_parser("rotate", help="encrypt everything again under a new key")
    add_json_arg(rotate)
    rotate.set_defaults(func=cmd_rotate)
    disable = key_sub.add_parser("disable", help="decrypt everything back into clear")
    add_json_arg(disable)
    disable.set_defaults(func=cmd_disable)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _keys():
    from continuation.host import keys

    return keys


def _reseal(engine, codec, old_sealer, new_sealer) -> dict:
    """The store's rows, then the files, under ``codec`` / ``new_sealer``."""
    from continuation.boundary import sealed_files

    rows = engine.store.reseal(codec)
    files, problems = sealed_files.reseal_all(engine.home_str, old_sealer, new_sealer)
    for problem in problems:
        sys.stderr.write(f"continuation: {problem}\n")
    return {"rows": rows, "files": files, "file_problems": problems}


def _codec(keys_by_id: dict, write_id: str):
    from continuation.host.sealing import Sealer
    from continuation.store.sealed import Codec

    return Codec(Sealer(keys_by_id, write_id), write_id)


def cmd_init(args) -> int:
    keys = _keys()
    import os

    with open_engine(keyed=False) as engine:
        meta = engine.store.encryption()
        if meta is not None:
            raise CommandError(f"the store is encrypted already (key {meta['key_id']}); "
                               "`continuation key rotate` changes the key")
        if os.environ.get(keys.ENV):
            key, where = keys.parse_key(os.environ[keys.ENV], f"${keys.ENV}"), f"${keys.ENV}"
        else:
            key, where = keys.new_key(), None
            path = os.path.expanduser(args.key_file) if args.key_file else keys.default_key_file()
            if args.keyring:
                if keys.read_keyring() is not None:
                    raise CommandError(f"the OS keyring holds a key already "
                                       f"({keys.KEYRING_SERVICE}/{keys.keyring_entry()}); remove "
                                       "it or use it with $CONTINUATION_KEY")
                keys.write_keyring(key)
                where = f"the OS keyring ({keys.KEYRING_SERVICE}/{keys.keyring_entry()})"
            else:
                existing = keys.read_key_file(path)
                if existing is not None:
                    key = existing  # a key the user made or kept: used, not replaced
                else:
                    keys.write_key_file(path, key)
                where = path
                if args.key_file and path != keys.default_key_file():
                    where += f" (set ${keys.FILE_ENV}={path} wherever continuation runs)"
        key_id = keys.key_id(key)
        codec = _codec({key_id: key}, key_id)
        done = _reseal(engine, codec, None, codec.sealer)
    report = {"key_id": key_id, "key": where, **done}
    if args.json:
        emit_json(report)
        return 0
    print(f"encrypted {done['rows']} stored value(s) and {done['files']} file(s) under key "
          f"{key_id} (AES-256-GCM)")
    print(f"the key is in {where}: keep a copy elsewhere; without it nothing recorded can be "
          "read, and every machine sharing this store needs it")
    return 0


def cmd_status(args) -> int:
    from continuation.boundary import sealed_files
    from continuation.commands.health import _sealed_file
    from continuation.store.sealed import KeyUnavailable

    keys = _keys()
    with open_engine(keyed=False) as engine:
        meta = engine.store.encryption()
        report = {"encrypted": meta is not None, "key_id": meta and meta["key_id"],
                  "cipher": meta and meta["cipher"], "key_found": None, "problem": None}
        if meta is not None:
            try:
                engine.store.codec
                report["key_found"] = True
            except KeyUnavailable as exc:
                report["key_found"], report["problem"] = False, str(exc)
        found = keys.find_keys()
        report["sources"] = [{"where": where, "key_id": keys.key_id(key)}
                             for where, key in found.keys]
        report["source_problems"] = found.problems
        files = sealed_files.files(engine.home_str)
        report["files"] = {"sealed": sum(_sealed_file(p) for p in files), "total": len(files)}
        report["looked_in"] = [f"${keys.ENV}", keys.default_key_file(),
                               f"keyring {keys.KEYRING_SERVICE}/{keys.keyring_entry()}"]
    if args.json:
        emit_json(report)
        return 0 if report["key_found"] is not False else 1
    if meta is None:
        print("encryption: off (the store and the files under the state home are in clear, "
              "0600); `continuation key init` turns it on")
    else:
        state = "found" if report["key_found"] else "NOT available"
        print(f"encryption: on, {meta['cipher']}, key {meta['key_id']} ({state})")
        if report["problem"]:
            print(f"  {report['problem']}")
    for source in report["sources"]:
        mark = "  (the store's)" if meta and source["key_id"] == meta["key_id"] else ""
        print(f"  key {source['key_id']} in {source['where']}{mark}")
    for problem in found.problems:
        print(f"  problem: {problem}")
    print(f"  files under the state home: {report['files']['sealed']} of "
          f"{report['files']['total']} sealed")
    print("  looked in: " + ", ".join(report["looked_in"]))
    return 0 if report["key_found"] is not False else 1


def cmd_rotate(args) -> int:
    keys = _keys()
    with open_engine(keyed=False) as engine:
        meta = engine.store.encryption()
        if meta is None:
            raise CommandError("the store is not encrypted: `continuation key init` first")
        old = engine.store.codec  # the current key must open what is there
        current = meta["key_id"]
        found = keys.find_keys()
        sources = {keys.key_id(k): (w, k) for w, k in found.keys}
        # a rotation cut short sealed the store under the next key already: finish it
        nexts = {kid: (w, k) for kid, (w, k) in sources.items()
                 if w.endswith(".next") or w == f"${keys.ENV_NEXT}"}
        resumed = current in nexts
        if resumed:
            new_id, (new_where, new_key) = current, nexts[current]
        elif nexts:
            new_id, (new_where, new_key) = next(iter(nexts.items()))
        else:
            where = sources.get(current, ("", b""))[0]
            new_key = keys.new_key()
            new_id = keys.key_id(new_key)
            if where == f"${keys.ENV}":
                raise CommandError(f"the key comes from ${keys.ENV}: set ${keys.ENV_NEXT} to a new "
                                   f"key (this one is new: {keys.key_text(new_key)}) and run "
                                   f"`continuation key rotate` again; then put it in ${keys.ENV}")
            if where.startswith("keyring:"):
                keys.write_keyring(new_key, next_=True)
                new_where = f"keyring:{keys.keyring_entry(True)}"
            else:
                new_where = (where or keys.default_key_file()) + ".next"
                keys.write_key_file(new_where, new_key)
        codec = _codec({**old.sealer.keys, new_id: new_key}, new_id)
        done = _reseal(engine, codec, codec.sealer, codec.sealer)
        if done["file_problems"]:
            raise CommandError(f"{len(done['file_problems'])} file(s) could not be sealed again "
                               "(named above); the store is sealed under the new key "
                               f"{new_id}: run `continuation key rotate` again to finish")
        promoted = _promote(keys, new_where, new_key)
    report = {"old_key_id": current if not resumed else None, "key_id": new_id,
              "resumed": resumed, "key": promoted, **done}
    if args.json:
        emit_json(report)
        return 0
    print(("finished the rotation: " if resumed else "rotated: ") + f"{done['rows']} stored "
          f"value(s) and {done['files']} file(s) sealed under key {new_id}")
    print(f"the key is in {promoted}")
    return 0


def _promote(keys, where: str, key: bytes) -> str:
    """The new key replaces the old one in its source; where it is now."""
    import os

    if where.startswith("keyring:"):
        keys.write_keyring(key)
        keys.write_keyring(None, next_=True)
        return f"the OS keyring ({keys.KEYRING_SERVICE}/{keys.keyring_entry()})"
    if where == f"${keys.ENV_NEXT}":
        return (f"${keys.ENV_NEXT}: put it in ${keys.ENV} (and unset ${keys.ENV_NEXT}) wherever "
                "continuation runs")
    final = where[:-len(".next")]
    keys.write_key_file(final, key)
    os.unlink(where)
    return final


def cmd_disable(args) -> int:
    from continuation.store.sealed import PLAIN

    with open_engine(keyed=False) as engine:
        if engine.store.encryption() is None:
            raise CommandError("the store is not encrypted")
        old = engine.store.codec
        done = _reseal(engine, PLAIN, old.sealer, None)
    if args.json:
        emit_json(done)
        return 0
    print(f"decrypted {done['rows']} stored value(s) and {done['files']} file(s) into clear; "
          "the key is no longer needed (delete it when no copy of the encrypted store is left)")
    return 0
