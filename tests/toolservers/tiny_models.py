"""Tiny random-weight models built with the libraries' own config classes and saved with
`save_pretrained`, so that the tests load them through toolgym's real loading code
(`from_pretrained(dir, local_files_only=True)`). Nothing is downloaded: the tokenizers'
vocabularies are written here. The models answer nonsense, deterministically."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any


def skimage_photo(name: str) -> Any:
    """A photo that ships with scikit-image (`astronaut`, `chelsea`, ...), as an RGB array."""
    return getattr(importlib.import_module("skimage.data"), name)()


def _lib(name: str) -> Any:
    """transformers and diffusers, typed as Any: their partial annotations do not pass mypy strict."""
    return importlib.import_module(name)


BERT_WORDS = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]", "a", "photo", "of", "the", "red", "orange",
    "blue", "cat", "dog", "woman", "man", "suit", "color", "colour", "is", "what", "describe", "image",
    "in", "detail", "object", "x", "y", "+", "=", "2", "^", "{", "}", "\\frac", ".",
]  # fmt: skip


def _bytes_to_unicode() -> list[str]:
    """GPT-2/CLIP's byte-level alphabet (the 256 symbols a byte-level BPE vocabulary starts from)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write_clip_tokenizer(directory: Path) -> int:
    """A CLIP BPE tokenizer with no merges: every character is a token. Returns the vocab size."""
    directory.mkdir(parents=True, exist_ok=True)
    chars = _bytes_to_unicode()
    vocab: dict[str, int] = {}
    for c in chars:
        vocab[c] = len(vocab)
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return len(vocab)


def _image_processor(name: str, **kwargs: Any) -> Any:
    """transformers 5 has Pillow-only image processors (the default ones want torchvision,
    which must not be installed here); transformers 4 has only the plain ones."""
    transformers = _lib("transformers")
    cls = getattr(transformers, f"{name}Pil", None) or getattr(transformers, name)
    return cls(**kwargs)


def _bert_tokenizer(directory: Path) -> Any:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(BERT_WORDS) + "\n", encoding="utf-8")
    return _lib("transformers").BertTokenizer(str(directory / "vocab.txt"), bos_token="[DEC]")


def _blip_config() -> Any:
    return _lib("transformers").BlipConfig(
        text_config={
            "vocab_size": len(BERT_WORDS),
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "max_position_embeddings": 64,
            "bos_token_id": 5,
            "pad_token_id": 0,
            "sep_token_id": 3,
            "eos_token_id": 3,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=32,
    )


def build_blip(directory: Path, *, vqa: bool, word: str | None = None) -> Path:
    """A tiny BLIP captioning (or VQA) model with its processor. With `word`, its output layer
    is biased so that it answers that word (repeated): a random model may answer nothing."""
    import torch

    tf = _lib("transformers")

    tokenizer = _bert_tokenizer(directory / "tok")
    torch.manual_seed(0)
    cls = tf.BlipForQuestionAnswering if vqa else tf.BlipForConditionalGeneration
    model = cls(_blip_config()).eval()
    if word is not None:
        with torch.no_grad():
            model.text_decoder.cls.predictions.bias[BERT_WORDS.index(word)] += 100.0
    model.generation_config.max_new_tokens = 6  # the model's own limit, which the backend honours
    processor = tf.BlipProcessor(
        image_processor=_image_processor("BlipImageProcessor", size={"height": 32, "width": 32}),
        tokenizer=tokenizer,
    )
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


def build_owlvit(directory: Path) -> Path:
    """A tiny OWL-ViT zero-shot detector with its processor."""
    import torch

    tf = _lib("transformers")

    n = write_clip_tokenizer(directory / "tok")
    # OWL-ViT's text encoder takes 16 tokens; its tokenizer says so, as the released models' do
    tokenizer = tf.CLIPTokenizer(
        str(directory / "tok" / "vocab.json"), str(directory / "tok" / "merges.txt"), model_max_length=16
    )
    config = tf.OwlViTConfig(
        text_config={
            "vocab_size": n,
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "max_position_embeddings": 16,
            "bos_token_id": n - 2,
            "eos_token_id": n - 1,
            "pad_token_id": n - 1,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=32,
    )
    torch.manual_seed(0)
    model = tf.OwlViTForObjectDetection(config).eval()
    with torch.no_grad():
        # random heads score boxes at random; shift the scores up so that the tests see boxes go
        # through the post-processing (logits = (similarity + shift) * scale)
        model.class_head.logit_shift.weight.zero_()
        model.class_head.logit_shift.bias.fill_(5.0)
        model.class_head.logit_scale.weight.zero_()
        model.class_head.logit_scale.bias.fill_(1.0)
        # and let the box head answer its prior: one box per image patch (random ones collapse)
        model.box_head.dense2.weight.zero_()
        model.box_head.dense2.bias.zero_()
    size = {"height": 32, "width": 32}
    processor = tf.OwlViTProcessor(
        image_processor=_image_processor("OwlViTImageProcessor", size=size, crop_size=size),
        tokenizer=tokenizer,
    )
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


def build_vision_encoder_decoder(directory: Path, word: str = "x") -> Path:
    """A tiny ViT + BERT-decoder formula recogniser with its image processor and tokenizer,
    biased to write `word` (repeated) so that its output is known."""
    import torch

    tf = _lib("transformers")

    tokenizer = _bert_tokenizer(directory / "tok")
    encoder = tf.ViTConfig(
        hidden_size=32,
        intermediate_size=37,
        num_hidden_layers=1,
        num_attention_heads=4,
        image_size=32,
        patch_size=8,
    )
    decoder = tf.BertConfig(
        vocab_size=len(BERT_WORDS),
        hidden_size=32,
        intermediate_size=37,
        num_hidden_layers=1,
        num_attention_heads=4,
        is_decoder=True,
        add_cross_attention=True,
    )
    config = tf.VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id = 2
    config.pad_token_id = 0
    config.eos_token_id = 3
    torch.manual_seed(0)
    model = tf.VisionEncoderDecoderModel(config=config).eval()
    with torch.no_grad():
        model.decoder.cls.predictions.bias[BERT_WORDS.index(word)] += 100.0
    model.generation_config.decoder_start_token_id = 2
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = 3
    model.generation_config.max_new_tokens = 4  # the model's own limit, which the backend honours
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    _image_processor("ViTImageProcessor", size={"height": 32, "width": 32}).save_pretrained(directory)
    return directory


def build_stable_diffusion(directory: Path, *, instruct_pix2pix: bool = False) -> Path:
    """A tiny random Stable Diffusion (or InstructPix2Pix) pipeline: 32x32 images in a few ms."""
    import torch

    tf = _lib("transformers")
    df = _lib("diffusers")

    n = write_clip_tokenizer(directory / "tok")
    tokenizer = tf.CLIPTokenizer(
        str(directory / "tok" / "vocab.json"), str(directory / "tok" / "merges.txt"), model_max_length=16
    )
    torch.manual_seed(0)
    unet = df.UNet2DConditionModel(
        block_out_channels=(8, 16),
        layers_per_block=1,
        sample_size=8,
        in_channels=8 if instruct_pix2pix else 4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16,
        norm_num_groups=4,
        attention_head_dim=2,
    )
    vae = df.AutoencoderKL(
        block_out_channels=(8, 16),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=4,
        norm_num_groups=4,
        sample_size=16,
    )
    text_encoder = tf.CLIPTextModel(
        tf.CLIPTextConfig(
            vocab_size=n,
            hidden_size=16,
            intermediate_size=37,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=16,
            bos_token_id=n - 2,
            eos_token_id=n - 1,
            pad_token_id=n - 1,
        )
    )
    scheduler = df.DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    cls = df.StableDiffusionInstructPix2PixPipeline if instruct_pix2pix else df.StableDiffusionPipeline
    pipe = cls(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(directory)
    return directory
