#!/usr/bin/env bash
# Delay links: 2 fake hosts whose links are the user-space forwarder tests/multihost/delaylink.c
# (`netns_hosts.sh up NAME N --delay-ms D [--rate-mbit R]`: each host's sent frames held D ms,
# as netem on its eth0 would). TCP between the hosts by tests/multihost/tcp_probe.py. Asserted:
#   - 0-ms delay links: the median TCP round trip between the hosts is under 1 ms (the forwarder
#     adds no delay of its own beyond processing); 16 MB arrive intact (SHA-256);
#   - D = 5 ms with R = 200 Mbit/s and a 1 MiB queue: every round trip >= 2 D (one D per
#     direction), the median < 2 D + 3 ms; 16 MB arrive intact (through the queue, full at times
#     and wrapping around) and not faster than R allows;
#   - 2 hosts x 2 ranks of full_shard over those links equal the same run over veth pairs
#     bitwise (losses and parameters), and host 0's delay link carried at least what the
#     schedule moves between the hosts (>= 12 P bytes per step, P parameters);
#   - after netns_hosts.sh down, no forwarder, interface or pid file of the hosts is left; and forwarders stop by themselves (TAPs gone) when the owner of their hosts exits.
SHARDVIT=$1
bash "$(dirname "$0")/netns_hosts.sh" check --delay-link || exit $?
MH_LINK="--delay-ms 0"
source "$(dirname "$0")/lib.sh"
S=6         # training steps
D=5         # ms, one way
R=200       # Mbit/s
BYTES=16000000
RUNDIR=/run/shardvit-netns
fail() { echo "FAIL: $*"; exit 1; }

# probe rtt N | probe bulk BYTES: lib.sh's tcp_probe from host 0 to host 1, its JSON into
# $WORK/probe.json
probe() {
    tcp_probe "$1" "$2" >"$WORK/probe.json" || fail "tcp_probe.py $1 failed: $(cat "$WORK/probe.json")"
    cat "$WORK/probe.json"
}
# js EXPR: a Python expression over the last probe's JSON (as j), printed
js() { "$PY" -c "import json, sys; j = json.load(open(sys.argv[1])); print($1)" "$WORK/probe.json"; }
# forwarders NAME: how many delay-link forwarders of the hosts of NAME run
forwarders() { ps -eo args | grep -c -- "[-]-pidfile $RUNDIR/$1h" || true; }
is_tap() { [ -e "/sys/class/net/$1/tun_flags" ]; }

probe rtt 200
[ "$(js "j['median_ms'] < 1")" = True ] || fail "0-ms delay links: median round trip $(js "j['median_ms']") ms (>= 1 ms)"
echo "ok 0-ms delay links: round trip median $(js "round(j['median_ms'], 3)") ms"
probe bulk $BYTES
[ "$(js "j['intact']")" = True ] || fail "0-ms delay links: the bulk transfer arrived damaged"
echo "ok 0-ms delay links: $BYTES bytes intact at $(js "round(j['mbit_s'])") Mbit/s"

mh_relink --delay-ms $D --rate-mbit $R --queue-mb 1
is_tap "${NETNS_NAME}v0" || fail "host 0's link is not a delay link (no TAP ${NETNS_NAME}v0)"
probe rtt 50
[ "$(js "j['min_ms'] >= 2 * $D")" = True ] || fail "$D-ms links: a round trip took $(js "j['min_ms']") ms (< 2 x $D)"
[ "$(js "j['median_ms'] < 2 * $D + 3")" = True ] ||
    fail "$D-ms links: median round trip $(js "j['median_ms']") ms (>= 2 x $D + 3)"
echo "ok $D-ms delay links: round trips $(js "round(j['min_ms'], 3)") .. $(js "round(j['max_ms'], 3)") ms," \
    "median $(js "round(j['median_ms'], 3)") ms (one D each way)"
probe bulk $BYTES
[ "$(js "j['intact']")" = True ] || fail "$D-ms links: the bulk transfer arrived damaged"
[ "$(js "j['seconds'] >= $BYTES * 8 / ($R * 1e6)")" = True ] ||
    fail "$D-ms links: $BYTES bytes in $(js "j['seconds']") s, faster than $R Mbit/s allows"
echo "ok $D-ms delay links, $R Mbit/s: $BYTES bytes intact in $(js "round(j['seconds'], 3)") s" \
    "($(js "round(j['mbit_s'])") Mbit/s of data)"

b0=$(host_bytes 0)
hrun dl 4 --steps $S
b1=$(host_bytes 0)
[ "$(forwarders "$NETNS_NAME")" = 2 ] || fail "$(forwarders "$NETNS_NAME") forwarders run for 2 hosts"
bash "$MH/netns_hosts.sh" down "$NETNS_NAME"
[ "$(forwarders "$NETNS_NAME")" = 0 ] || fail "forwarders still run after down"
left=$(ip -o link show | grep -c -- "$NETNS_NAME" || true)
[ "$left" = 0 ] || fail "$left interfaces of $NETNS_NAME are left after down"
! ls "$RUNDIR/$NETNS_NAME"* >/dev/null 2>&1 || fail "pid files or logs of $NETNS_NAME are left after down"
echo "ok down: no forwarder, interface or file of the hosts is left"
mh_up
hrun veth 4 --steps $S
compare dl veth --bitwise
P=$(logline dl "training vit-28 \([0-9]+ params\)" | sed -E 's/.*\(([0-9]+) params\).*/\1/')
[ $((b1 - b0)) -ge $((S * 12 * P)) ] || fail "host 0's delay link carried $((b1 - b0)) bytes (< $((S * 12 * P)))"
echo "ok full_shard over delay links = over veth; host 0's delay link carried $((b1 - b0)) bytes"

# hosts of another owner: their forwarders follow it
sleep 60 &
owner=$!
trap 'kill $owner 2>/dev/null || true; bash "$MH/netns_hosts.sh" down svn$owner || true; mh_cleanup' EXIT
bash "$MH/netns_hosts.sh" up "svn$owner" 1 --delay-ms 0 >/dev/null
[ "$(forwarders "svn$owner")" = 1 ] || fail "no forwarder for the hosts of svn$owner"
kill $owner
wait $owner 2>/dev/null || true
for _ in $(seq 20); do
    [ "$(forwarders "svn$owner")" = 0 ] && ! is_tap "svn${owner}v0" && break
    sleep 0.1
done
[ "$(forwarders "svn$owner")" = 0 ] || fail "the forwarder still runs 2 s after its owner exited"
! is_tap "svn${owner}v0" || fail "the TAP svn${owner}v0 is left 2 s after its owner exited"
echo "ok owner gone: its forwarder stopped and took its TAPs along"
bash "$MH/netns_hosts.sh" down "svn$owner"
trap mh_cleanup EXIT
echo "multihost delay_link: all passed"
