# Sourced by the replays of the stored H200 profiles (shape_replay.sh,
# kernel_replay.sh): from the project root, unpacks $DATA (default
# bench/data/h200-qwen2-0.5b) into a temporary folder, $tmp, removed on exit.
data=${DATA:-bench/data/h200-qwen2-0.5b}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$data"/*.profile.json.gz; do gunzip -c "$f" > "$tmp/$(basename "$f" .gz)"; done
