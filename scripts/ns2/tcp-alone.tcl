# One ns-2 TCP flow alone on a path like the fairness benchmark's Set 2 paths, with ns-2's
# TCP defaults of the benchmark's era (ns-default.tcl of 2002-2003: window_ 20, windowInit_ 2,
# singledup_ 1, minrto_ 1, tcpTick_ 0.01, rtxcur_init_ 6, rfc2988_ true), to compare with
# the simulator's TCP on the same path (docs/reproduction.md, Set 2 high loss, f2).
#
#   apt-get install ns2       # Debian's ns 2.35; not needed by any make target
#   ns scripts/ns2/tcp-alone.tcl SEED LOSS ONE_WAY_MS FLAVOUR
#   e.g. ns scripts/ns2/tcp-alone.tcl 1 0.08 99 reno   (Set 2's 8% / 200 ms path)
#        ns scripts/ns2/tcp-alone.tcl 1 0.02 199 sack  (its 2% / 400 ms path)
#
# Topology: 10 Mbit/s links of 1 ms, ONE_WAY_MS and 1 ms, 30-packet drop-tail queues,
# Bernoulli loss LOSS on the middle link's forward direction only (as the scenario's
# `loss`); 1400-byte packets; FTP from 1 s. Prints the goodput over 100-3000 s in kbit/s
# (cumulatively ACKed packets x 1400 bytes), the retransmission timeouts and the
# retransmitted packets.
if {$argc != 4} {
    puts stderr "usage: ns tcp-alone.tcl SEED LOSS ONE_WAY_MS reno|newreno|sack"
    exit 2
}
lassign $argv seed lossrate owd flavour
switch $flavour {
    reno    { set agent Agent/TCP/Reno;    set sinkc Agent/TCPSink }
    newreno { set agent Agent/TCP/Newreno; set sinkc Agent/TCPSink }
    sack    { set agent Agent/TCP/Sack1;   set sinkc Agent/TCPSink/Sack1 }
    default { puts stderr "unknown flavour $flavour (reno, newreno, sack)"; exit 2 }
}
global defaultRNG
$defaultRNG seed $seed
Agent/TCP set window_ 20
Agent/TCP set windowInit_ 2
Agent/TCP set singledup_ 1
Agent/TCP set minrto_ 1
Agent/TCP set tcpTick_ 0.01
Agent/TCP set rtxcur_init_ 6.0
Agent/TCP set maxrto_ 100000
Agent/TCP set rfc2988_ true
Agent/TCP set precisionReduce_ false
Agent/TCP set updated_rttvar_ false
Agent/TCP set packetSize_ 1400
set ns [new Simulator]
set n0 [$ns node]; set n1 [$ns node]; set n2 [$ns node]; set n3 [$ns node]
$ns duplex-link $n0 $n1 10Mb 1ms DropTail
$ns duplex-link $n1 $n2 10Mb ${owd}ms DropTail
$ns duplex-link $n2 $n3 10Mb 1ms DropTail
foreach {a b} [list $n0 $n1 $n1 $n2 $n2 $n3] {
    $ns queue-limit $a $b 30
    $ns queue-limit $b $a 30
}
set em [new ErrorModel]
$em unit pkt
$em set rate_ $lossrate
$em ranvar [new RandomVariable/Uniform]
$em drop-target [new Agent/Null]
$ns lossmodel $em $n1 $n2
set tcp [new $agent]
set sink [new $sinkc]
$ns attach-agent $n0 $tcp
$ns attach-agent $n3 $sink
$ns connect $tcp $sink
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 1.0 "$ftp start"
set a0 0
$ns at 100.0 {set a0 [$tcp set ack_]}
$ns at 3000.0 {
    set a1 [$tcp set ack_]
    puts [format "%s seed %s: %.1f kbit/s, %s timeouts, %s packets retransmitted" $flavour \
        $seed [expr {($a1 - $a0) * 1400 * 8 / 2900.0 / 1000}] [$tcp set nrexmit_] \
        [$tcp set nrexmitpack_]]
    exit 0
}
$ns run
