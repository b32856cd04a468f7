// One bulk TCP flow over one point-to-point bottleneck, with the TCP settings of mpsched's
// ns-3 grid (experiments/ns3.py: SACK, initial window 10, MSS 1448, an acknowledgement per
// segment, PRR, minimum RTO 1 s, no queue disc, Cubic without HyStart). Data packets are
// lost at random by a RateErrorModel on the receiving device (independent draws, not the
// grid's paired losses). Built against one ns-3 build by benchmarks/ns3_build_profile.py,
// which times the same runs in several builds.
//
// usage: ns3_bulk_flow CC RATE_MBPS RTT_MS LOSS QUEUE_PACKETS SECONDS
// prints: the arguments, goodput_mbps G, wall_ms W (Simulator::Run alone)
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace ns3;

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s CC RATE_MBPS RTT_MS LOSS QUEUE_PACKETS SECONDS\n", argv[0]);
        return 2;
    }
    const std::string cc = argv[1];
    if (cc != "newreno" && cc != "cubic") {
        fprintf(stderr, "CC: got %s; expected newreno or cubic\n", argv[1]);
        return 2;
    }
    const double rate_mbps = atof(argv[2]), rtt_ms = atof(argv[3]), loss = atof(argv[4]), seconds = atof(argv[6]);
    const int queue_packets = atoi(argv[5]);
    if (!(rate_mbps > 0) || !(rtt_ms > 0) || !(loss >= 0 && loss < 1) || queue_packets < 1 || !(seconds > 0)) {
        fprintf(stderr, "expected RATE_MBPS > 0, RTT_MS > 0, 0 <= LOSS < 1, QUEUE_PACKETS >= 1, SECONDS > 0\n");
        return 2;
    }
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue(cc == "cubic" ? "ns3::TcpCubic" : "ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 27));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 27));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpCubic::HyStart", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(1000)));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(TcpPrrRecovery::GetTypeId()));
    RngSeedManager::SetSeed(1);

    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", StringValue(std::to_string((long long)(rate_mbps * 1e6)) + "bps"));
    link.SetChannelAttribute("Delay", TimeValue(NanoSeconds((long long)(rtt_ms * 5e5))));
    link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                  QueueSizeValue(QueueSize(std::to_string(queue_packets) + "p")));
    NetDeviceContainer devices = link.Install(nodes);
    InternetStackHelper().Install(nodes);
    Ipv4AddressHelper addresses;
    addresses.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer interfaces = addresses.Assign(devices);
    TrafficControlHelper().Uninstall(devices); // the device queue is the bottleneck queue
    Ptr<RateErrorModel> errors = CreateObject<RateErrorModel>();
    errors->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    errors->SetRate(loss);
    errors->AssignStreams(1);
    devices.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(errors));

    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 9));
    ApplicationContainer sinkApps = sink.Install(nodes.Get(1));
    BulkSendHelper sender("ns3::TcpSocketFactory", InetSocketAddress(interfaces.GetAddress(1), 9));
    sender.SetAttribute("MaxBytes", UintegerValue(0));
    ApplicationContainer senderApps = sender.Install(nodes.Get(0));
    sinkApps.Start(Seconds(0));
    senderApps.Start(Seconds(0));
    Simulator::Stop(Seconds(seconds + rtt_ms / 1e3)); // the handshake's round trip, as in the grid

    const auto begin = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const uint64_t received = DynamicCast<PacketSink>(sinkApps.Get(0))->GetTotalRx();
    Simulator::Destroy();
    printf("%s %g %g %g %d %g goodput_mbps %.4f wall_ms %.3f\n", cc.c_str(), rate_mbps, rtt_ms, loss, queue_packets,
           seconds, received * 8 / seconds / 1e6, wall_s * 1e3);
    return 0;
}
