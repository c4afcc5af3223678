"""The stepsim Python module: its API, its errors, and the documents it returns."""

import json
import math
import os
import subprocess

import pytest

import stepsim
from conftest import SCENARIOS

GPT3 = str(SCENARIOS / "gpt3-175b-a100-64.json")


def gpt3_dict():
    with open(GPT3, encoding="utf-8") as f:
        d = json.load(f)
    # The file names its system and profile relative to scenarios/; a dict resolves them
    # against the current folder, then scenarios/.
    return d


def test_load_path_and_dict_predict_the_same():
    a = stepsim.predict(stepsim.load(GPT3))
    b = stepsim.predict(gpt3_dict())
    assert a == b
    assert a["step_time_s"] > 0
    assert 0 < a["mfu"] <= a["hfu"] <= 1


def test_provenance_says_where_the_prices_came_from():
    # The public A100 profile: published GEMMs, a host borrowed from the measured H100, and
    # what `stepsim accuracy` measured over the open runs priced with it (never applied).
    p = stepsim.predict(GPT3)["provenance"]
    assert p["parts"]["gemm"] == ["published"]
    assert p["host"] == {"origin": "borrowed", "from": "h100-sxm5-80gb-measured.json",
                         "detail": "torch 2.11.0+cu130, its CPU model not recorded"}
    assert p["open_accuracy"]["runs"] >= 1
    assert "stepsim accuracy: this profile's" in p["line"]


def test_scenario_object():
    s = stepsim.load(GPT3)
    assert s.name == "gpt3-175b-a100-64"
    assert "--tensor-model-parallel-size 8" in s.megatron_args
    assert "t8 p8 v3" in repr(s)
    assert stepsim.load(s) is s


def test_bad_scenario_raises_scenario_error_with_file_key_rule():
    d = gpt3_dict()
    d["training"]["tensor_model_parallel_size"] = 6
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.load(d)
    assert e.value.file == "<dict>"
    by_key = {p["key"]: p["rule"] for p in e.value.problems}
    assert "tensor_model_parallel_size*pipeline_model_parallel_size=6*8" in \
        by_key["training.world_size"]
    assert (e.value.key, e.value.rule) == (e.value.problems[0]["key"], e.value.problems[0]["rule"])
    assert "<dict>: training.world_size=64 is not divisible" in str(e.value)
    assert isinstance(e.value, ValueError)
    assert all(set(p) == {"file", "key", "rule"} for p in e.value.problems)


def test_unknown_key_and_missing_file_raise():
    d = gpt3_dict()
    d["training"]["moe_z_loss_coeff"] = 0.001
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.load(d)
    assert e.value.key.startswith("training.moe_z_loss_coeff")
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.load("/nonexistent/s.json")
    assert e.value.file == "/nonexistent/s.json"
    with pytest.raises(TypeError):
        stepsim.load(42)


def test_check_lists_every_problem():
    assert stepsim.check(GPT3) == []
    d = gpt3_dict()
    d["training"]["tensor_model_parallel_size"] = 6
    d["training"]["micro_batch_size"] = 0
    problems = stepsim.check(d)
    keys = {p["key"] for p in problems}
    assert {"training.world_size", "training.micro_batch_size"} <= keys


def test_full_rank_matches_the_cli_and_the_representative_step(stepsim_bin):
    full = stepsim.predict(GPT3, full_rank=True)
    assert full["step_time_s"] == pytest.approx(stepsim.predict(GPT3)["step_time_s"], rel=1e-9)
    cli = subprocess.run([stepsim_bin, "predict", GPT3, "--full-rank", "--jitter", "0.1",
                          "--seed", "3", "--slow-nic", "1=2", "--straggler", "9=1.3",
                          "--format", "json"], capture_output=True, text=True, check=True)
    perturbed = stepsim.predict(GPT3, full_rank=True, jitter=0.1, seed=3, slow_nics={1: 2.0},
                                stragglers={9: 1.3})
    assert perturbed == json.loads(cli.stdout)
    assert perturbed["step_time_s"] > full["step_time_s"]
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.predict(GPT3, jitter=0.1)
    assert e.value.key == "--jitter"
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.predict(GPT3, full_rank=True, slow_nics={99: 2.0})
    assert e.value.key == "--slow-nic"


def test_trace_is_written(tmp_path):
    trace = tmp_path / "step.json"
    p = stepsim.predict(str(SCENARIOS / "llama3-8b-h100-8.json"), trace=trace)
    doc = json.loads(trace.read_text())
    assert doc["stepsim"]["step_time_s"] == p["step_time_s"]
    assert any(e["ph"] == "X" for e in doc["traceEvents"])


def test_trace_to_unwritable_path_is_a_simulation_error():
    with pytest.raises(stepsim.SimulationError):
        stepsim.predict(GPT3, trace="/nonexistent/dir/t.json")


def test_memory_and_schedule():
    m = stepsim.memory(GPT3)
    assert len(m["stages"]) == 8
    assert m["peak_bytes"] == max(s["peak_bytes"] for s in m["stages"])
    s = stepsim.schedule(pp=4, microbatches=8, vpp=2)
    assert s["params"]["schedule"] == "interleaved"
    assert len(s["ranks"]) == 4
    # Every rank runs every (micro-batch, chunk) forward and backward once.
    for r in s["ranks"]:
        assert sorted(map(tuple, r["ops"])) == sorted(
            (k, mb, c) for k in "BF" for mb in range(8) for c in range(2))
    with pytest.raises(stepsim.ScenarioError, match="interleaved schedule only"):
        stepsim.schedule(pp=4, microbatches=8, overlap_p2p=True)


def test_make_it_fit_in_memory_and_predict():
    # Llama 2 70B as shipped fits; with micro-batch 4, no sequence parallelism and no
    # distributed optimizer it does not, and both documents list changes that fit.
    with open(SCENARIOS / "llama2-70b-h100-64.json", encoding="utf-8") as f:
        d = json.load(f)
    assert "make_it_fit" not in stepsim.memory(d)
    d["training"].update(micro_batch_size=4, sequence_parallel=False,
                         use_distributed_optimizer=False, overlap_param_gather=False)
    m = stepsim.memory(d)
    assert not m["fits"]
    advice = m["make_it_fit"]
    assert advice["peak"] == "analytic" and advice["suggestions"]
    for s in advice["suggestions"]:
        changed = json.loads(json.dumps(d))
        for c in s["changes"]:
            section, key = c["key"].split(".", 1)
            changed[section][key] = c["to"]
        assert stepsim.check(changed) == []
        assert stepsim.memory(changed)["fits"]
    times = [s["step_time_s"] for s in advice["suggestions"]]
    assert times == sorted(times)
    p = stepsim.predict(d)
    assert not p["fits_in_memory"]
    assert p["make_it_fit"]["peak"] == "simulated"


def test_sweep_rows_go_into_a_data_frame():
    pd = pytest.importorskip("pandas")
    spec = {"base": "llama3-8b-h100-8.json",
            "search": {"training.tensor_model_parallel_size": "auto",
                       "training.micro_batch_size": [1, 2]},
            "top": 3}
    rows = stepsim.sweep(spec, jobs=2)
    df = pd.DataFrame(rows)
    assert len(df) == rows.summary["evaluated"] == len(rows)
    assert list(df["index"]) == list(range(len(df)))
    assert {"training.tensor_model_parallel_size", "status", "tokens_per_s",
            "peak_memory_bytes"} <= set(df.columns)
    feasible = df[df.status == "feasible"]
    assert len(feasible) == rows.summary["feasible"] > 0
    best = rows.summary["best"][0]
    assert feasible.tokens_per_s.max() == best["metrics"]["tokens_per_s"]
    skipped = df[~df.simulated]
    assert all(v is None or (isinstance(v, float) and math.isnan(v))
               for v in skipped.step_time_s)


def test_sweep_pareto_best_and_per_gpu_count_are_flat_rows():
    pd = pytest.importorskip("pandas")
    spec = {"base": "llama3-8b-h100-8.json",
            "search": {"training.world_size": [8, 16],
                       "training.tensor_model_parallel_size": [1, 2],
                       "training.context_parallel_size": [1, 2],
                       "training.micro_batch_size": [1, 2],
                       "training.recompute_granularity": ["none", "full"]},
            "top": 3}
    rows = stepsim.sweep(spec, jobs=2, price_per_gpu_hour=2.0, train_tokens=1e10)
    # Flat rows, the same dicts as the sweep's: a data frame takes them as they are.
    front = pd.DataFrame(rows.pareto)
    assert list(front["index"]) == [p["index"] for p in rows.summary["pareto"]]
    assert {"training.context_parallel_size", "tokens_per_s", "peak_memory_bytes",
            "usd_per_million_tokens", "train_usd"} <= set(front.columns)
    assert list(front.peak_memory_bytes) == sorted(front.peak_memory_bytes)
    assert all(r in rows for r in rows.pareto)
    # At most 8 points of the front, both ends included.
    assert 1 <= len(rows.pareto_summary) <= 8
    assert rows.pareto_summary[0] is rows.pareto[0]
    assert rows.pareto_summary[-1] is rows.pareto[-1]
    assert [r["index"] for r in rows.best] == [b["index"] for b in rows.summary["best"]]
    # The best per GPU count is the fastest row of each count.
    df = pd.DataFrame(rows)
    feasible = df[df.status == "feasible"]
    per_count = {r["training.world_size"]: r for r in rows.best_per_gpu_count}
    assert sorted(per_count) == [8, 16]
    for gpus, r in per_count.items():
        assert r["tokens_per_s"] == feasible[feasible["training.world_size"] == gpus] \
            .tokens_per_s.max()
    # $ per million tokens = GPUs x price / 3600 / tokens/s x 1e6, by closed form.
    cost = feasible["training.world_size"] * 2.0 / 3600 / feasible.tokens_per_s * 1e6
    assert list(feasible.usd_per_million_tokens) == pytest.approx(list(cost), rel=1e-12)
    assert rows.summary["price_per_gpu_hour"] == 2.0
    # min_cost ranks by the whole run's dollars.
    cheap = stepsim.sweep(spec, jobs=2, objective="min_cost", price_per_gpu_hour=2.0,
                          train_tokens=1e10)
    assert cheap.best[0]["train_usd"] == pytest.approx(
        pd.DataFrame(cheap)[lambda d: d.status == "feasible"].train_usd.min())
    with pytest.raises(stepsim.ScenarioError, match="price_per_gpu_hour"):
        stepsim.sweep(spec, objective="min_cost")
    with pytest.raises(stepsim.ScenarioError, match="did you mean"):
        stepsim.sweep({"base": "llama3-8b-h100-8.json", "search": {"training.tp": [1]}})


def test_scenario_repr_names_context_and_expert_parallelism():
    assert " cp2 " in repr(stepsim.load(str(SCENARIOS / "llama31-8b-cp2-h100-8.json")))
    moe = repr(stepsim.load(str(SCENARIOS / "qwen3-30b-a3b-h100-16-fp8.json")))
    assert " ep16 etp1 " in moe and "fp8=hybrid/" in moe


def test_bad_sweep_raises():
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.sweep({"base": "llama3-8b-h100-8.json",
                       "search": {"training.no_such_knob": [1]}})
    assert "training.no_such_knob" in str(e.value)
    with pytest.raises(ValueError):
        stepsim.sweep({"base": "llama3-8b-h100-8.json", "search": {}}, jobs=-1)


def test_import_hf_and_megatron():
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
           "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
           "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
           "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
           "hidden_act": "silu"}
    model = stepsim.import_hf(cfg)["model"]
    assert model["num_query_groups"] == 8 and model["swiglu"] is True
    s = stepsim.load(GPT3)
    line = "torchrun --nnodes 8 --nproc_per_node 8 pretrain_gpt.py " + s.megatron_args
    scenario = stepsim.import_megatron(line, system="systems/dgx-a100-80gb.json")
    assert scenario["training"]["tensor_model_parallel_size"] == 8
    assert stepsim.load(scenario).name
    with pytest.raises(stepsim.ScenarioError):
        stepsim.import_megatron("pretrain_gpt.py --num-layers")


def test_version_matches_the_cli(stepsim_bin):
    out = subprocess.run([stepsim_bin, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"stepsim {stepsim.__version__}"


def test_train_tokens_and_megatron_tflops():
    p = stepsim.predict(GPT3, train_tokens=300e9)
    cfg = p["configuration"]
    tokens_per_step = cfg["global_batch_size"] * cfg["seq_length"]
    tt = p["time_to_train"]
    assert tt["steps"] == -(-300_000_000_000 // tokens_per_step)
    assert tt["time_s"] == pytest.approx(tt["steps"] * p["step_time_s"], rel=1e-12)
    assert tt["gpu_hours"] == pytest.approx(tt["time_s"] * cfg["world_size"] / 3600, rel=1e-12)
    assert p["tokens_per_s_per_gpu"] == pytest.approx(p["tokens_per_s"] / cfg["world_size"])
    # Megatron-LM's num_floating_point_operations() for GPT-3 175B (no GQA, no SwiGLU):
    # 6 B s (h (4 h) 2 L + (4 h^2) L + h V) + 6 B s^2 h L (causal: half of QK^T and AV).
    h, L, V, s, B = 12288, 96, 51200, 2048, cfg["global_batch_size"]
    flops = 6 * B * s * (h * 4 * h * 2 * L + 4 * h * h * L + h * V) + 6 * B * s * s * h * L
    assert p["megatron_tflops_per_gpu"] == pytest.approx(
        flops / (p["step_time_s"] * cfg["world_size"]) / 1e12, rel=1e-9)
    assert "time_to_train" not in stepsim.predict(GPT3)
    with pytest.raises(stepsim.ScenarioError):
        stepsim.predict(GPT3, train_tokens=0.5)


def test_objectives_per_gpu_and_time_to_train():
    pd = pytest.importorskip("pandas")
    spec = {"base": "llama3-8b-h100-8.json",
            "search": {"training.world_size": [8, 16],
                       "training.tensor_model_parallel_size": [1, 2],
                       "training.micro_batch_size": [1, 2]},
            "objective": "max_tokens_per_s_per_gpu", "top": 3}
    rows = stepsim.sweep(spec, jobs=2)
    df = pd.DataFrame(rows)
    feasible = df[df.status == "feasible"]
    per_gpu = feasible.tokens_per_s / feasible["training.world_size"]
    best = rows.summary["best"][0]["metrics"]
    assert best["tokens_per_s_per_gpu"] == pytest.approx(per_gpu.max())
    assert [s["key"] for s in rows.summary["swept"]][:1] == ["training.world_size"]
    spec.update(objective="min_time_to_train", train_tokens=1e12)
    rows = stepsim.sweep(spec, jobs=2)
    times = [b["metrics"]["time_to_train"]["time_s"] for b in rows.summary["best"]]
    assert times == sorted(times) and rows.summary["train_tokens"] == 10**12
    del spec["train_tokens"]
    with pytest.raises(stepsim.ScenarioError, match="train_tokens"):
        stepsim.sweep(spec)


def test_stragglers_and_trace_shape_match_the_cli(stepsim_bin, tmp_path):
    cli = subprocess.run([stepsim_bin, "predict", GPT3, "--straggler", "0=1.25", "--format",
                          "json"], capture_output=True, text=True, check=True)
    slow = stepsim.predict(GPT3, stragglers={0: 1.25})
    assert slow == json.loads(cli.stdout)
    assert slow["step_time_s"] > stepsim.predict(GPT3)["step_time_s"]

    trace = tmp_path / "mb.json"
    stepsim.predict(GPT3, trace=trace, trace_level="microbatch", trace_ranks=[0, 7])
    events = json.loads(trace.read_text())["traceEvents"]
    pids = {e["pid"] for e in events if e["ph"] == "X"}
    assert pids == {0, 7}
    full = tmp_path / "op.json"
    stepsim.predict(GPT3, trace=full, trace_ranks=[0, 7])
    kept = json.loads(full.read_text())
    assert len(kept["traceEvents"]) > len(events)
    assert kept["stepsim"]["trace_level"] == "op"  # two ranks' ops fit the default's budget
    # All eight ranks' ops would pass 50 MB: the default ("auto") writes micro-batch level.
    whole = tmp_path / "auto.json"
    stepsim.predict(GPT3, trace=whole)
    summary = json.loads(whole.read_text())["stepsim"]
    assert summary["trace_level"] == "microbatch"
    assert "--trace-level op" in summary["trace_note"]


def test_contention_switch_matches_the_cli(stepsim_bin):
    cli = subprocess.run([stepsim_bin, "predict", GPT3, "--no-contention", "--format", "json"],
                         capture_output=True, text=True, check=True)
    free = stepsim.predict(GPT3, contention=False)
    assert free == json.loads(cli.stdout)
    assert free["step_time_s"] < stepsim.predict(GPT3)["step_time_s"]


def test_bad_stragglers_and_trace_shape_raise():
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.predict(GPT3, stragglers={64: 1.2})
    assert e.value.key == "--straggler"
    with pytest.raises(stepsim.ScenarioError):
        stepsim.predict(GPT3, stragglers={0: float("nan")})
    with pytest.raises(stepsim.ScenarioError):
        stepsim.predict(GPT3, stragglers={0: 1e300})
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.predict(GPT3, trace="/tmp/x.json", trace_ranks=[8])
    assert e.value.key == "--trace-ranks"
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.predict(GPT3, trace_level="microbatch")
    assert e.value.key == "trace_level"
    with pytest.raises(stepsim.ScenarioError):
        stepsim.predict(GPT3, trace="/tmp/x.json", trace_level="layer")


def test_issue_41_hostile_inputs_raise_naming_file_and_key(tmp_path):
    # FP8 parameters in an fp32 job: refused at load, as check and predict refuse it.
    d = gpt3_dict()
    d["training"].pop("bf16", None)
    d["training"].update({"fp8": "hybrid", "fp8_param_gather": True,
                          "use_distributed_optimizer": True})
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.load(d)
    assert "training.fp8_param_gather" in {p["key"] for p in e.value.problems}
    # A FIFO is refused without blocking, saying what it is.
    fifo = tmp_path / "sweep.json"
    os.mkfifo(fifo)
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.sweep(fifo)
    assert e.value.file == str(fifo) and "not a regular file" in e.value.rule
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.load(str(fifo))
    assert "FIFO" in e.value.rule
    # import_hf runs check's rules: 7 heads do not divide a hidden size of 768.
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.import_hf({"architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_embd": 768,
                           "n_head": 7, "n_positions": 1024, "vocab_size": 50257})
    assert e.value.key == "model.hidden_size"


def test_systems_are_the_cli_listing_and_short_names_load(stepsim_bin):
    rows = stepsim.systems()
    cli = subprocess.run([stepsim_bin, "systems", "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    assert rows == json.loads(cli)
    h100 = next(r for r in rows if r["name"] == "dgx-h100-80gb")
    assert h100["gpu_name"] == "NVIDIA H100-SXM5-80GB"
    assert h100["gpus_per_node"] == 8
    assert h100["profiles"] == ["h100-sxm5-80gb-measured", "h100-sxm5-80gb-public"]
    assert h100["default_cost_model"] == "h100-sxm5-80gb-public"
    # A scenario names a system and a profile by short name (or a unique prefix).
    d = gpt3_dict()
    d["system"] = "dgx-a100"
    d["cost_model"] = {"profile": "a100-sxm4-80gb-public"}
    assert stepsim.predict(d)["step_time_s"] == stepsim.predict(GPT3)["step_time_s"]
    d["system"] = "dgx-h"
    with pytest.raises(stepsim.ScenarioError) as e:
        stepsim.load(d)
    assert e.value.key == "system"
    assert "dgx-h100-80gb, dgx-h200" in e.value.rule


def test_omitted_keys_take_the_clis_megatron_defaults(stepsim_bin, tmp_path):
    # No attention_backend: Megatron-Core's "auto", so context parallelism needs none named;
    # no cost_model: the shipped public profile of the system's GPU, and the report says so.
    d = {"name": "t",
         "model": {"num_layers": 8, "hidden_size": 512, "num_attention_heads": 8,
                   "seq_length": 256, "vocab_size": 1000},
         "training": {"world_size": 8, "context_parallel_size": 2, "micro_batch_size": 1,
                      "global_batch_size": 8, "bf16": True},
         "system": "dgx-h100"}
    p = stepsim.predict(d)
    assert p["cost_model"].startswith("profile h100-sxm5-80gb-public.json")
    assert p["cost_model_default"] == ("default: the shipped public profile of the system's "
                                       "GPU; \"cost_model\": \"roofline\" for the data sheet's "
                                       "roofline")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(d))
    cli = subprocess.run([stepsim_bin, "predict", str(path), "--format", "json"],
                         capture_output=True, text=True, check=True)
    assert p == json.loads(cli.stdout)
    d["cost_model"] = "roofline"
    roofline = stepsim.predict(d)
    assert roofline["cost_model"].startswith("roofline ")
    assert "cost_model_default" not in roofline
