"""A small, learnable synthetic corpus and a tokenizer trained on it (no downloads)."""

from __future__ import annotations

import json
import os
import random

SUBJECTS = ["the cat", "a dog", "the old farmer", "my sister", "the robot", "a small bird", "the teacher"]
VERBS = ["sees", "likes", "finds", "carries", "paints", "follows", "builds"]
OBJECTS = ["a red ball", "the blue house", "seven apples", "a long river", "the green door", "two boxes"]
PLACES = ["in the garden", "near the lake", "at the market", "under the bridge", "on the hill"]
NUMBERS = "one two three four five six seven eight nine ten".split()


def documents(n_docs: int = 400, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        sents = []
        for _ in range(rng.randint(3, 7)):
            if rng.random() < 0.25:
                k = rng.randint(0, 5)
                sents.append("we count " + " ".join(NUMBERS[k:k + 5]) + " .")
            else:
                sents.append(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
                             f"{rng.choice(PLACES)} .")
        docs.append(" ".join(sents))
    return docs


def write_corpus(dir_: str) -> list[str]:
    """Half the documents as a .txt (blank-line separated), half as .jsonl."""
    docs = documents()
    os.makedirs(dir_, exist_ok=True)
    txt, jsonl = os.path.join(dir_, "part1.txt"), os.path.join(dir_, "part2.jsonl")
    half = len(docs) // 2
    with open(txt, "w") as f:
        f.write("\n\n".join(docs[:half]) + "\n")
    with open(jsonl, "w") as f:
        for d in docs[half:]:
            f.write(json.dumps({"text": d}) + "\n")
    return [txt, jsonl]


def write_tokenizer(dir_: str, texts: list[str], vocab_size: int = 200) -> str:
    """A BPE tokenizer trained on `texts`, saved as a PreTrainedTokenizerFast directory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.BPEDecoder()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size,
                                                       special_tokens=["<unk>", "<s>", "</s>"]))
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(dir_)
    return dir_
