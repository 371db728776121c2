"""The schedules driven by the dev metric: ``plateau`` (halve on a stall) and
``halving_after_plateau`` (the full rate while dev improves, then the paper's halving, then
stop)."""

from __future__ import annotations

import pytest
import torch
from conftest import compose_cfg, fit_toy, tiny_overrides

from luong_lit.errors import ConfigError
from luong_lit.training.schedules import HalvingAfterPlateau, HalvingOnceStalled, Plateau


def optimizer(lr: float = 1.0) -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def rates(scheduler, metrics) -> list[float]:
    seen = []
    for m in metrics:
        scheduler.step(m)
        seen.append(scheduler.optimizer.param_groups[0]["lr"])
    return seen


def test_full_rate_while_dev_improves_then_halving_every_validation_whatever_it_does():
    s = HalvingOnceStalled(optimizer(), halvings=3, after=0, mode="min", threshold=0.0)
    # improves, improves, stalls (first halving), then halves even when it improves again
    assert rates(s, [10.0, 9.0, 9.5, 8.0, 7.0]) == [1.0, 1.0, 0.5, 0.25, 0.125]
    assert s.halved == 3 and not s.finished and s.best == 7.0
    # the validation after the last rate has trained ends the schedule, the rate kept
    assert rates(s, [6.0]) == [0.125] and s.finished and s.halved == 3


def test_after_keeps_the_full_rate_through_early_stalls():
    s = HalvingOnceStalled(optimizer(), halvings=2, after=3, mode="min", threshold=0.0)
    assert rates(s, [10.0, 11.0, 12.0, 9.0, 9.5]) == [1.0, 1.0, 1.0, 1.0, 0.5]
    assert not s.finished


def test_mode_max_follows_a_metric_that_should_grow():
    s = HalvingOnceStalled(optimizer(), halvings=1, after=0, mode="max", threshold=0.0)
    assert rates(s, [10.0, 12.0, 11.0]) == [1.0, 1.0, 0.5] and not s.finished
    assert rates(s, [13.0]) == [0.5] and s.finished


def test_the_state_round_trips_through_a_checkpoint():
    s = HalvingOnceStalled(optimizer(), halvings=5, after=0, mode="min", threshold=0.0)
    rates(s, [10.0, 9.0, 9.5])
    t = HalvingOnceStalled(optimizer(0.5), halvings=5, after=0, mode="min", threshold=0.0)
    t.load_state_dict(s.state_dict())
    assert (t.halved, t.best, t.last_epoch) == (1, 9.0, 3)
    assert rates(t, [8.0]) == rates(s, [8.0]) == [0.25]


def test_plateau_is_torchs_reduce_on_plateau_with_the_monitored_metric():
    desc = Plateau(patience=1, factor=0.5)(optimizer())
    assert isinstance(desc["scheduler"], torch.optim.lr_scheduler.ReduceLROnPlateau)
    # stepped after each validation by the kit, never by Lightning at an epoch's end
    assert desc["scheduler"].monitor == "val/ppl" and desc["reduce_on_plateau"] is False
    assert rates(desc["scheduler"], [10.0, 11.0, 12.0, 9.0]) == [1.0, 1.0, 0.5, 0.5]


@pytest.mark.parametrize(
    ("make", "option"),
    [
        (lambda: Plateau(factor=1.5), "factor=1.5"),
        (lambda: Plateau(mode="up"), "mode='up'"),
        (lambda: Plateau(patience=-1), "patience=-1"),
        (lambda: HalvingAfterPlateau(halvings=0), "halvings=0"),
        (lambda: HalvingAfterPlateau(monitor=""), "model.scheduler.monitor"),
    ],
)
def test_bad_options_are_named(make, option):
    with pytest.raises(ConfigError, match=option.replace("(", r"\(")):
        make()


def test_a_toy_run_stops_when_the_halvings_are_done(toy_corpus, tmp_path):
    """``mode=max`` on a perplexity that falls: every validation after the first is a stall, so
    the halving starts after epoch 2 and, with 2 halvings, the run stops after epoch 4 of 20."""
    worse = ["callbacks.model_checkpoint.mode=max", "model.scheduler.halvings=2"]
    folder = fit_toy(tmp_path, toy_corpus, 20, [*worse, "logger=csv"],
                     schedule=("schedule=halving_after_plateau",))  # fmt: skip
    last = torch.load(folder / "last.ckpt", map_location="cpu", weights_only=True)
    assert last["epoch"] == 3
    assert last["optimizer_states"][0]["param_groups"][0]["lr"] == pytest.approx(0.25)
    assert last["lr_schedulers"][0]["halved"] == 2


def test_the_plateau_schedules_compose_from_the_config(tmp_path, toy_corpus):
    for name in ("plateau", "halving_after_plateau"):
        cfg = compose_cfg([*tiny_overrides(toy_corpus), f"schedule={name}"], tmp_path)
        assert cfg.model.scheduler.monitor == "val/ppl" and cfg.model.scheduler.mode == "min"
