"""The multimodal RL workload: an on-disk corpus of text, image and video prompts with
verifiable integer answers, the lightweight metadata a controller schedules from, and the
real decode/preprocess work (Pillow/zlib decode, resize to a patch grid, normalise, patchify)
that FlexRL's ShadowLoader moves off the controller onto the workers.

A :class:`MediaSample` is what the controller sees: ids, file paths, the prompt and an
*estimated* token length read from file headers only (image size, or frame count and frame
size of a video), never from decoded pixels."""

from __future__ import annotations

import math
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr26 import validation as V

MODALITIES = ("text", "image", "video")
PATCH = 8  # patch side in pixels (after downsampling)
DOWNSAMPLE = 4  # stored media are decoded at 4x the model's resolution, then resized
FRAME_STRIDE = 2  # temporal subsampling of video frames
MAX_GRID = 16  # at most 16 x 16 patches per image / frame
PATCH_DIM = PATCH * PATCH * 3
CHARS = " 0123456789abcdefghijklmnopqrstuvwxyz.,:?+-()=_"
PAD_ID, EOS_ID, MEDIA_ID = 0, 1, 2  # MEDIA_ID marks no token: media positions use patch embeds
VOCAB_SIZE = 3 + len(CHARS)
_CHAR_TO_ID = {c: i + 3 for i, c in enumerate(CHARS)}


def encode_text(text: str) -> list[int]:
    """Character-level token ids of ``text`` (lower-cased; characters outside the vocabulary
    are an error, never dropped)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out = []
    for c in text.lower():
        if c not in _CHAR_TO_ID:
            raise ValueError(f"text contains {c!r}, which is outside the vocabulary")
        out.append(_CHAR_TO_ID[c])
    return out


def _check_ids(ids) -> list[int]:
    if isinstance(ids, str) or not isinstance(ids, Sequence | np.ndarray):
        raise TypeError(f"ids must be a sequence of token ids, got {type(ids).__name__}")
    if len(ids) == 0:
        return []
    return V.check_array(ids, "ids", ndim=1, dtype=np.int64).tolist()


def decode_text(ids: Sequence[int]) -> str:
    """Inverse of :func:`encode_text`; stops at the first end-of-sequence id, skips padding."""
    chars = []
    for i in _check_ids(ids):
        i = int(i)
        if i == EOS_ID:
            break
        if i >= 3 and i < VOCAB_SIZE:
            chars.append(CHARS[i - 3])
    return "".join(chars)


def _grid_side(pixels: int) -> int:
    return int(min(MAX_GRID, max(1, pixels // (DOWNSAMPLE * PATCH))))


def media_tokens_from_header(modality: str, uris: Sequence[str]) -> int:
    """Media tokens of a sample estimated from file headers only (what the controller may
    afford): an image's size, a video's frame count and frame size."""
    if modality == "text":
        return 0
    total = 0
    for uri in uris:
        if modality == "image":
            from PIL import Image

            with Image.open(uri) as im:  # reads the header, not the pixels
                w, h = im.size
            total += _grid_side(h) * _grid_side(w)
        else:
            f, h, w = _video_header(uri)
            total += math.ceil(f / FRAME_STRIDE) * _grid_side(h) * _grid_side(w)
    return total


def _video_header(uri: str) -> tuple[int, int, int]:
    """Frame count (the archive's directory) and frame size (the first frame's header)."""
    from PIL import Image

    with zipfile.ZipFile(uri) as zf:
        names = sorted(zf.namelist())
        if not names:
            raise ValueError(f"{uri}: the video has no frames")
        with zf.open(names[0]) as fh, Image.open(fh) as im:
            w, h = im.size
    return len(names), int(h), int(w)


@dataclass(frozen=True)
class MediaSample:
    """Controller-side metadata of one RL prompt (no pixels).

    ``est_tokens`` = media tokens from headers + prompt tokens; it is what the planner's cost
    model sees. ``answer`` is the verifiable integer (0-9) the rule-based reward checks."""

    sample_id: int
    modality: str
    uris: tuple[str, ...]
    prompt: str
    answer: int
    est_tokens: int

    def __post_init__(self) -> None:
        V.check_int(self.sample_id, "sample_id", low=0)
        V.check_choice(self.modality, "modality", MODALITIES)
        if not isinstance(self.uris, tuple) or not all(isinstance(u, str) for u in self.uris):
            raise TypeError("uris must be a tuple of file paths")
        if self.modality == "text" and self.uris:
            raise ValueError("uris must be empty for a text sample")
        if self.modality != "text" and not self.uris:
            raise ValueError(f"uris must name at least one file for a {self.modality} sample")
        if not isinstance(self.prompt, str):
            raise TypeError(f"prompt must be a str, got {type(self.prompt).__name__}")
        V.check_int(self.answer, "answer", low=0, high=9)
        V.check_int(self.est_tokens, "est_tokens", low=0)
        n_prompt = len(self.prompt)
        if self.est_tokens < n_prompt:
            raise ValueError(
                f"est_tokens ({self.est_tokens}) is below the prompt's {n_prompt} tokens"
            )
        if self.est_tokens == 0:
            raise ValueError(
                f"sample {self.sample_id} has no tokens (empty prompt and no media); "
                "a sample with nothing to compute cannot be scheduled"
            )

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt)

    @property
    def media_tokens(self) -> int:
        return self.est_tokens - len(self.prompt)


def make_sample(
    sample_id: int, modality: str, uris: Sequence[str], prompt: str, answer: int
) -> MediaSample:
    """A :class:`MediaSample` whose token estimate is read from the files' headers."""
    V.check_choice(modality, "modality", MODALITIES)
    uris = tuple(str(u) for u in uris)
    for u in uris:
        if not Path(u).is_file():
            raise FileNotFoundError(f"uris: {u} is not a file")
    encode_text(prompt)  # the prompt must be in the vocabulary
    est = media_tokens_from_header(modality, uris) + len(prompt)
    return MediaSample(int(sample_id), modality, uris, prompt, int(answer), int(est))


# ---------------------------------------------------------------- preprocessing (real work)


@dataclass
class Decoded:
    """A materialised sample: ``patches`` float32 ``[n_media_tokens, PATCH_DIM]`` (empty for
    text) and the prompt's token ids (int64)."""

    sample_id: int
    patches: np.ndarray
    prompt_ids: np.ndarray

    @property
    def n_tokens(self) -> int:
        return int(self.patches.shape[0] + self.prompt_ids.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.patches.nbytes + self.prompt_ids.nbytes)


def _patchify(frame: np.ndarray) -> np.ndarray:
    """Resize an ``[H, W, 3]`` uint8 frame to its patch grid, normalise to [-1, 1] and cut it
    into ``PATCH x PATCH`` patches (row-major) -> float32 ``[gh * gw, PATCH_DIM]``."""
    from PIL import Image

    gh, gw = _grid_side(frame.shape[0]), _grid_side(frame.shape[1])
    im = Image.fromarray(frame).resize((gw * PATCH, gh * PATCH), Image.BILINEAR)
    x = (np.asarray(im, dtype=np.float32) / 127.5) - 1.0
    x = x.reshape(gh, PATCH, gw, PATCH, 3).transpose(0, 2, 1, 3, 4)
    return np.ascontiguousarray(x.reshape(gh * gw, PATCH_DIM))


def load_frames(sample: MediaSample) -> list[np.ndarray]:
    """Decode a sample's media into uint8 ``[H, W, 3]`` frames (videos temporally
    subsampled by ``FRAME_STRIDE``)."""
    frames: list[np.ndarray] = []
    if sample.modality == "image":
        from PIL import Image

        for uri in sample.uris:
            with Image.open(uri) as im:
                frames.append(np.asarray(im.convert("RGB")))
    elif sample.modality == "video":
        import io

        from PIL import Image

        for uri in sample.uris:
            with zipfile.ZipFile(uri) as zf:
                for name in sorted(zf.namelist())[::FRAME_STRIDE]:
                    with Image.open(io.BytesIO(zf.read(name))) as im:
                        frames.append(np.asarray(im.convert("RGB")))
    return frames


def preprocess_sample(sample: MediaSample) -> Decoded:
    """Decode and preprocess one sample (the work a controller does for every sample in a
    veRL-style pipeline and a ShadowLoader worker does for its own). Deterministic: the same
    sample gives bit-identical arrays wherever it runs."""
    if not isinstance(sample, MediaSample):
        raise TypeError(f"sample must be a MediaSample, got {type(sample).__name__}")
    frames = load_frames(sample)
    if frames:
        patches = np.concatenate([_patchify(f) for f in frames], axis=0)
    else:
        patches = np.zeros((0, PATCH_DIM), dtype=np.float32)
    ids = np.asarray(encode_text(sample.prompt), dtype=np.int64)
    out = Decoded(sample.sample_id, patches, ids)
    if out.n_tokens == 0:
        raise ValueError(f"sample {sample.sample_id} decoded to no tokens")
    if out.n_tokens != sample.est_tokens:
        raise ValueError(
            f"sample {sample.sample_id}: header estimate {sample.est_tokens} tokens but "
            f"decoded {out.n_tokens}; the file changed after its metadata was read"
        )
    return out


# ---------------------------------------------------------------- corpus builder

_PHOTOS = ("astronaut", "coffee", "chelsea", "camera", "rocket", "stereo_motorcycle")
_IMAGE_SIDES = (256, 320, 384, 448, 512)  # -> 8..16 patches a side after DOWNSAMPLE
_VIDEO_SIDE = 256  # -> 8 x 8 = 64 tokens per frame
_VIDEO_FRAMES = (16, 32)  # stored frames; FRAME_STRIDE 2 -> 8..16 frames = 512..1024 tokens


def _photos() -> list:
    import skimage.data as sd
    from PIL import Image

    out = []
    for name in _PHOTOS:
        img = getattr(sd, name)()
        if isinstance(img, tuple):
            img = img[0]
        if img.ndim == 2:
            img = np.stack([img] * 3, axis=-1)
        out.append(Image.fromarray(np.ascontiguousarray(img[..., :3].astype(np.uint8))))
    return out


def _crop_resize(photo, box: tuple[int, int, int], side: int):
    """The square crop ``(top, left, size)`` of a PIL photo resized to ``side`` pixels."""
    from PIL import Image

    top, left, size = box
    return photo.resize((side, side), Image.BILINEAR, box=(left, top, left + size, top + size))


def _digit(x: float) -> int:
    """A mean in [-1, 1] as a digit 0..9."""
    return int(min(9, max(0, math.floor((x + 1.0) / 2.0 * 10.0))))


def _quadrant_answer(patches: np.ndarray, gh: int, gw: int) -> int:
    grid = patches.reshape(gh, gw, PATCH, PATCH, 3)
    return _digit(float(grid[: max(1, gh // 2), : max(1, gw // 2)].mean()))


def build_multimodal_corpus(
    root: str | Path,
    n: int,
    mix: Sequence[float] = (0.5, 0.35, 0.15),
    seed: int = 0,
) -> list[MediaSample]:
    """Write ``n`` RL prompts to ``root`` and return their metadata.

    ``mix`` = shares of text-only, image and video prompts. Images are crops of scikit-image's
    bundled photos resized to 256-512 px and saved as PNG or JPEG (64-256 tokens); videos are
    16-32 pan/zoom crops at 256 px saved as motion-JPEG zip archives (512-1024 tokens); text prompts
    hold a digit list (32-64 tokens). Every answer is a digit computed from the preprocessed
    data (a text sum mod 10, the mean intensity of an image's top-left quadrant, of a video's
    last frame), so a rule-based reward exists."""
    import io

    from PIL import Image

    n = V.check_int(n, "n", low=1)
    mix = V.check_array(mix, "mix", ndim=1, shape=(3,), low=0.0)
    if not math.isclose(float(mix.sum()), 1.0, abs_tol=1e-6):
        raise ValueError(f"mix must sum to 1, got {float(mix.sum()):g}")
    seed = V.check_int(seed, "seed", low=0)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    photos = _photos()
    kinds = rng.choice(3, size=n, p=mix / mix.sum())
    samples = []
    for i, kind in enumerate(kinds):
        modality = MODALITIES[int(kind)]
        photo = photos[int(rng.integers(len(photos)))]
        w, h = photo.size
        if modality == "text":
            count = int(rng.integers(2, 12))
            digits = rng.integers(0, 10, size=count)
            prompt = "digits: " + " ".join(str(d) for d in digits) + ". sum mod 10? answer:"
            samples.append(make_sample(i, "text", (), prompt, int(digits.sum() % 10)))
            continue
        if modality == "image":
            side = int(rng.choice(_IMAGE_SIDES))
            size = int(rng.integers(min(h, w) // 2, min(h, w) + 1))
            box = (int(rng.integers(0, h - size + 1)), int(rng.integers(0, w - size + 1)), size)
            img = _crop_resize(photo, box, side)
            ext = ".png" if rng.random() < 0.5 else ".jpg"
            path = root / f"{i:05d}{ext}"
            if ext == ".jpg":
                img.save(path, quality=92)
            else:
                img.save(path, compress_level=1)
            prompt = "mean of the top-left quadrant, 0-9? answer:"
        else:
            frames_n = int(rng.integers(_VIDEO_FRAMES[0], _VIDEO_FRAMES[1] + 1))
            size0 = int(rng.integers(min(h, w) // 2, min(h, w) + 1))
            top, left = int(rng.integers(0, h - size0 + 1)), int(rng.integers(0, w - size0 + 1))
            dy, dx, dz = rng.integers(-3, 4, size=3)
            frames = []
            for f in range(frames_n):
                size = int(np.clip(size0 + dz * f, 32, min(h, w)))
                t = int(np.clip(top + dy * f, 0, h - size))
                lft = int(np.clip(left + dx * f, 0, w - size))
                frames.append(_crop_resize(photo, (t, lft, size), _VIDEO_SIDE))
            path = root / f"{i:05d}.mjpeg.zip"  # a motion-JPEG clip: one JPEG per frame
            with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
                for f, frame in enumerate(frames):
                    buf = io.BytesIO()
                    frame.save(buf, format="JPEG", quality=90)
                    zf.writestr(f"frame_{f:04d}.jpg", buf.getvalue())
            prompt = "mean of the last frame, 0-9? answer:"
        meta = make_sample(i, modality, (str(path),), prompt, 0)
        decoded = preprocess_sample(meta)
        if modality == "image":
            with Image.open(path) as im:
                gw, gh = _grid_side(im.size[0]), _grid_side(im.size[1])
            answer = _quadrant_answer(decoded.patches, gh, gw)
        else:
            per_frame = _grid_side(_VIDEO_SIDE) ** 2
            answer = _digit(float(decoded.patches[-per_frame:].mean()))
        samples.append(MediaSample(i, modality, meta.uris, prompt, answer, meta.est_tokens))
    return samples


def answer_reward(completion_ids: Sequence[int], answer: int) -> float:
    """Rule-based reward: 1 if the completion's first non-space character is the answer's
    digit, else 0."""
    answer = V.check_int(answer, "answer", low=0, high=9)
    text = decode_text(completion_ids).strip()
    return 1.0 if text[:1] == str(answer) else 0.0
