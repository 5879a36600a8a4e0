"""Build real framework checkpoints (Lightning, HF Trainer, accelerate, DCP).

Run as a script in a subprocess (``python fwkit.py OUT``) so the frameworks' imports and
global state stay out of the test process; each writes what it writes by default.
"""

from __future__ import annotations

import os
import sys
import warnings

import torch


def _lightning(out: str) -> None:
    import lightning as L  # noqa: N812 - the library's own spelling

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch: list[torch.Tensor], index: int) -> torch.Tensor:
            return self.layer(batch[0]).pow(2).mean()

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.Adam(self.parameters())

    data = torch.utils.data.TensorDataset(torch.randn(8, 4))
    trainer = L.Trainer(
        max_epochs=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        default_root_dir=os.path.join(out, "lightning"),
        # the defaults people use: a ModelCheckpoint (kth_value = +inf) and an EarlyStopping
        # whose metric never arrived (best_score = +inf)
        callbacks=[L.pytorch.callbacks.EarlyStopping(monitor="val_loss", strict=False)],
    )
    trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=4))


def _hf(out: str) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    config = GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=32, n_positions=16)
    model = GPT2LMHeadModel(config)

    class Tokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            x = torch.randint(0, 32, (8,))
            return {"input_ids": x, "labels": x}

    args = TrainingArguments(
        output_dir=os.path.join(out, "hf"),
        max_steps=1,
        save_steps=1,
        per_device_train_batch_size=4,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=Tokens()).train()


def _accelerate(out: str) -> None:
    from accelerate import Accelerator

    acc = Accelerator(cpu=True)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters())
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    model, opt, sched = acc.prepare(model, opt, sched)
    acc.save_state(os.path.join(out, "accelerate"))


def _dcp(out: str) -> None:
    import torch.distributed.checkpoint as dcp

    state = {"model": torch.nn.Linear(64, 32).state_dict(), "step": 5, "extra": {"lr": 0.1}}
    dcp.save(state, checkpoint_id=os.path.join(out, "dcp"))


def main(out: str) -> None:
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    for build in (_lightning, _hf, _accelerate, _dcp):
        build(out)


if __name__ == "__main__":
    main(sys.argv[1])
