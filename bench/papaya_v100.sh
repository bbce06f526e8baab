#!/usr/bin/env bash
# Benchmark (c) of issue 7: PAPAYA's global fit on its own V100 measurements.
# Targets: R² >= 0.97 for every series with at least 4 points, and the paper's
# verdicts: checkpointing helps Swin-L and GPT3-medium; no optimization helps
# ResNet-50 or BERT-large on one V100.
# Usage: bench/papaya_v100.sh [papaya binary]   (default build/papaya; needs jq)
set -euo pipefail
cd "$(dirname "$0")/.."
papaya=${1:-build/papaya}
data=bench/data/papaya-v100.csv

echo "command: $papaya fit --measurements $data --json"
fits=$("$papaya" fit --measurements "$data" --json)

echo
echo "R² of the series with at least 4 points (memory: 4 peaks; time: 4 runs); target 0.97"
jq -r '
  def r2(v; n): if n >= 4 and v != null then (v * 10000 | floor / 10000 | tostring) else "-" end;
  def miss(v; n): n >= 4 and v != null and v < 0.97;
  (["network", "precision", "strategy", "runs", "peaks", "R² memory", "R² time", "target"] | @tsv),
  (.[] | select(.points >= 4) |
    [.network, .precision, .strategy, .points, .memory_points,
     r2(.r2_memory; .memory_points), r2(.r2_time; .points),
     (if miss(.r2_memory; .memory_points) or miss(.r2_time; .points) then "MISSED" else "met" end)] | @tsv)
' <<<"$fits" | column -t -s $'\t'
jq -r '
  [.[] | select(.points >= 4)] as $s
  | ([$s[] | select(.memory_points >= 4 and .r2_memory != null)] | length) as $m
  | ([$s[] | select(.memory_points >= 4 and .r2_memory != null and .r2_memory >= 0.97)] | length) as $mok
  | ([$s[] | select(.r2_time != null)] | length) as $t
  | ([$s[] | select(.r2_time != null and .r2_time >= 0.97)] | length) as $tok
  | "memory: \($mok) of \($m) series at R² >= 0.97; time: \($tok) of \($t)"
' <<<"$fits"

echo
echo "Verdicts (helps: higher best samples/s within 16 GiB than 'none' of the same precision)"
jq -r '
  def yn(v): if v == null then "-" elif v then "yes" else "no" end;
  def num(v): if v == null then "-" else (v * 10 | round / 10 | tostring) end;
  (["network", "precision", "strategy", "best samples/s", "baseline", "helps", "analytic", "note"] | @tsv),
  (.[] | select(.strategy != "none") |
    [.network, .precision, .strategy, num(.best_samples_per_s), num(.baseline_best_samples_per_s),
     yn(.helps), yn(.helps_analytic), (.verdict_note // "")] | @tsv)
' <<<"$fits" | column -t -s $'\t'

echo
echo "The paper's verdicts"
jq -r '
  def judged(net): [.[] | select(.network == net and .strategy != "none")];
  def helps_check(net; what):
    [judged(net)[] | select(.strategy == "checkpoint")] as $c
    | if ($c | map(select(.helps == true)) | length) > 0 then "reproduced: \(what)"
      elif ($c | map(select(.helps == false)) | length) > 0 then "CONTRADICTED: \(what)"
      else "NOT DECIDED: \(what) (" + ($c | map("\(.precision) checkpoint: \(.points) runs, \(.verdict_note // "")") | join("; ")) + ")"
      end;
  def none_check(net; what):
    judged(net) as $s
    | if ($s | map(select(.helps == true)) | length) > 0
      then "CONTRADICTED: \(what) (" + ($s | map(select(.helps == true) | "\(.precision) \(.strategy)") | join(", ")) + " helps)"
      elif ($s | map(select(.helps == null)) | length) > 0
      then "partly: \(what); undecided: " + ($s | map(select(.helps == null) | "\(.precision) \(.strategy)") | join(", "))
      else "reproduced: \(what) (" + ($s | map("\(.precision) \(.strategy)") | join(", ")) + ")"
      end;
  helps_check("swin_large"; "checkpointing helps Swin-L"),
  helps_check("transformer_lm_gpt3_medium"; "checkpointing helps GPT3-medium"),
  none_check("resnet50"; "no optimization helps ResNet-50"),
  none_check("bert-large-cased"; "no optimization helps BERT-large")
' <<<"$fits"
