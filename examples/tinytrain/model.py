"""The model: a small MLP with dropout, so resuming must also restore the RNG to be exact."""

from __future__ import annotations

from torch import Tensor, nn

# isort: split
# Sibling module (see train.py).
from config import Config


class MLP(nn.Module):
    def __init__(
        self, in_features: int, hidden_sizes: tuple[int, ...], num_classes: int, dropout: float
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, features: Tensor) -> Tensor:
        logits: Tensor = self.net(features)
        return logits


def build_model(cfg: Config) -> MLP:
    return MLP(
        in_features=cfg.data.num_features,
        hidden_sizes=cfg.model.hidden_sizes,
        num_classes=cfg.data.num_classes,
        dropout=cfg.model.dropout,
    )
