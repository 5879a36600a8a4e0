"""Synthetic classification data and a shuffling sampler whose epoch order can be replayed."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Sampler, TensorDataset

# isort: split
# Sibling module (see train.py).
from config import DataConfig

Batch = tuple[Tensor, ...]


def make_dataset(cfg: DataConfig) -> TensorDataset:
    """A fixed noisy teacher problem: labels are the argmax of a random linear map.

    Everything is drawn from a private generator, so the data never depends on --seed or on
    how much of the global RNG other code has consumed.
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    features = torch.randn(cfg.num_samples, cfg.num_features, generator=gen)
    teacher = torch.randn(cfg.num_features, cfg.num_classes, generator=gen)
    labels = (features @ teacher).argmax(dim=1)
    flipped = torch.rand(cfg.num_samples, generator=gen) < cfg.label_noise
    noise = torch.randint(0, cfg.num_classes, (cfg.num_samples,), generator=gen)
    return TensorDataset(features, torch.where(flipped, noise, labels))


class ResumableRandomSampler(Sampler[int]):
    """Reshuffles every epoch from its own generator and can restart in the middle of one.

    It does not count consumed samples itself: DataLoader pulls indices ahead of the training
    loop (more so with workers), so only the loop knows how many samples were trained on.
    """

    def __init__(self, num_samples: int, seed: int) -> None:
        super().__init__()
        self._num_samples = num_samples
        self._generator = torch.Generator().manual_seed(seed)
        self._epoch_start_state = self._generator.get_state()
        self._skip = 0

    def __len__(self) -> int:
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        # Captured before drawing, so a checkpoint can redraw exactly this epoch's order.
        self._epoch_start_state = self._generator.get_state()
        order = torch.randperm(self._num_samples, generator=self._generator)
        skip, self._skip = self._skip, 0
        return iter(order[skip:].tolist())

    def epoch_start_state(self) -> Tensor:
        return self._epoch_start_state.clone()

    def resume_at(self, epoch_start_state: Tensor, samples_consumed: int) -> None:
        """Make the next epoch replay the saved epoch's order, minus what was already used."""
        if not 0 <= samples_consumed <= self._num_samples:
            raise ValueError(
                f"samples_consumed={samples_consumed} outside [0, {self._num_samples}]"
            )
        self._generator.set_state(epoch_start_state)
        self._skip = samples_consumed


def make_loader(
    dataset: TensorDataset,
    sampler: ResumableRandomSampler,
    batch_size: int,
    num_workers: int,
    seed: int,
) -> DataLoader[Batch]:
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        # Equal-sized batches keep "samples consumed" a multiple of the batch size, so a
        # resumed epoch is cut into exactly the same batches as an uninterrupted one.
        drop_last=True,
        num_workers=num_workers,
        # Each new iterator draws a worker base seed. Without a private generator that draw
        # comes from the global RNG, and the extra iterator a mid-epoch resume creates would
        # shift every later dropout mask.
        generator=torch.Generator().manual_seed(seed),
    )
