"""Reading a SentencePiece model proto for `sentencepiece_ops.CoreSentencePiece`.

`parse` reads the proto's bytes; `check_model` refuses, in one line, what the core-op
tokenizer cannot reproduce exactly; `space_codepoints` decodes the normalizer's
`precompiled_charsmap` (a Darts-clone double array, `charsmap`) into the code points it
maps to U+0020, the only rules t2t_lite's vocabularies have
(`t2t_lite.data.text_encoder.train_vocab`). Python only; nothing here runs in a graph.
"""

from __future__ import annotations

import struct

from t2t_lite.data.text_encoder import DataError

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
BPE = 2  # TrainerSpec.ModelType


def parse(model_proto: bytes):
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    try:
        model.ParseFromString(bytes(model_proto))
    except Exception:  # noqa: BLE001  (protobuf's DecodeError has no stable home)
        model.Clear()
    if not model.pieces:
        raise DataError("not a SentencePiece model proto; pass the bytes of a .model file")
    return model


def check_model(model, pieces, types):
    """Raises DataError (a ValueError) for what CoreSentencePiece cannot reproduce."""
    trainer, normalizer = model.trainer_spec, model.normalizer_spec
    kinds = dict(zip(pieces, types))
    checks = [
        (trainer.model_type != BPE, "model_type is not BPE"),
        (not trainer.byte_fallback, "byte_fallback is off"),
        (trainer.treat_whitespace_as_suffix, "treat_whitespace_as_suffix is on"),
        (not (normalizer.remove_extra_whitespaces and normalizer.escape_whitespaces),
         "remove_extra_whitespaces or escape_whitespaces is off"),
        (model.denormalizer_spec.precompiled_charsmap, "it has a denormalizer"),
        (USER_DEFINED in types or UNUSED in types, "it has user-defined or unused pieces"),
        (types.count(UNKNOWN) != 1, "it needs exactly one unknown piece"),
        (any(len(p) == 1 and t != NORMAL for p, t in kinds.items()),
         "a reserved piece is a single character"),
        (any(kinds.get(f"<0x{b:02X}>") != BYTE for b in range(256)),
         "some of the 256 byte pieces are missing"),
        (space_codepoints(normalizer) is None,
         "its normalization maps more than whitespace to spaces (e.g. NFKC)"),
    ]
    problems = [message for failed, message in checks if failed]
    if problems:
        raise DataError(f"CoreSentencePiece cannot reproduce this SentencePiece model: "
                        f"{'; '.join(problems)}; use tensorflow_text.SentencepieceTokenizer")


def space_codepoints(normalizer):
    """Sorted code points the normalizer maps to U+0020, or None if it maps anything else."""
    codes = []
    for key, value in charsmap(normalizer.precompiled_charsmap):
        text = key.decode("utf-8", errors="replace") if key is not None else ""
        if value != b" " or len(text) != 1 or text.encode() != key:
            return None
        codes.append(ord(text))
    return sorted(codes) or [0x20]


def charsmap(blob: bytes):
    """Yields the rules (key, value bytes) of a precompiled charsmap (a Darts-clone
    double array); (None, None) if the blob is malformed. Empty blob: no rules."""
    if not blob:
        return
    try:
        size = struct.unpack("<I", blob[:4])[0]
        units = struct.unpack(f"<{size // 4}I", blob[4:4 + size])
        strings = blob[4 + size:]
    except struct.error:
        yield None, None
        return
    stack = [(_offset(units[0]) if units else 0, b"")]
    while stack:
        node, prefix = stack.pop()
        for label in range(1, 256):
            child = node ^ label
            if child >= len(units) or units[child] & 0x800000FF != label:
                continue
            following = child ^ _offset(units[child])
            if len(prefix) > 16 or following >= len(units):
                yield None, None
                return
            if units[child] >> 8 & 1:
                start = units[following] & 0x7FFFFFFF
                end = strings.find(b"\0", start)
                yield prefix + bytes([label]), strings[start:end if end >= 0 else None]
            stack.append((following, prefix + bytes([label])))


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)
