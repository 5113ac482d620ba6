//! An R-Type core set up for hot-path measurements, shared by `benches/core.rs` and
//! `tests/it/no_alloc.rs`: rate limits out of the way, rooms created
//! and bound without sockets.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use lobbyd::ratelimit::PerIpConfig;
use lobbyd::rtype::{
    InstanceRequest, LobbyReply, LobbyRequest, Output, RoomId, RtypeConfig, RtypeCore,
};
use lobbyd::wire::instance::{self, ClientMsg, ClientRepr};
use lobbyd::wire::udp_lobby::{emit_room_list, RoomRecord};

/// 127.0.0.`n`:`port`.
pub fn addr(n: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)), port)
}

/// A lobby with no rate limits in the way (as `bench.sh` runs lobbyd).
pub fn lobby(now: Instant) -> RtypeCore {
    RtypeCore::new(
        RtypeConfig {
            max_rooms: 200,
            max_rooms_per_ip: 200,
            rate: PerIpConfig {
                rate: u64::from(u32::MAX),
                per: Duration::from_secs(1),
                burst: u64::from(u32::MAX),
                byte_rate: 0,
                byte_burst: 0,
                max_entries: 65_536,
            },
            ..RtypeConfig::default()
        },
        now,
        // The UDP hot path draws no player hashes; a fixed sequence keeps runs the same.
        Box::new(counting_hashes()),
    )
}

/// Player hashes 1, 2, 3, ...
fn counting_hashes() -> impl FnMut() -> u64 + Send {
    let mut next = 0u64;
    move || {
        next += 1;
        next
    }
}

/// Creates `n` rooms, each with its instance bound on port 5000 + i; returns their ids.
pub fn with_rooms(lobby: &mut RtypeCore, now: Instant, n: u16) -> Vec<RoomId> {
    let mut rooms = Vec::new();
    for i in 0..n {
        lobby.handle_lobby_request(now, addr(1, 1000 + i), i, LobbyRequest::CreateRoom);
        while let Some(output) = lobby.poll_output() {
            if let Output::OpenInstance { room } = output {
                lobby.handle_instance_opened(now, room, Some(5000 + i));
                rooms.push(room);
            }
        }
    }
    while lobby.poll_output().is_some() {}
    rooms
}

/// One room with members 127.0.0.1-4:2000 admitted on its instance.
pub fn room_of_four(lobby: &mut RtypeCore, now: Instant) -> RoomId {
    let room = with_rooms(lobby, now, 1)[0];
    for member in 1..=4 {
        let request = InstanceRequest::Hello { token: None };
        lobby.handle_instance_request(now, room, addr(member, 2000), 0, request);
    }
    while lobby.poll_output().is_some() {}
    room
}

/// One LIST_ROOMS from `client` answered the way the driver does without a cached list:
/// request into the core, outputs drained, the ROOM_LIST emitted into `buf`. Returns its
/// length (0 if no list was queued, e.g. rate-limited).
pub fn list_once(
    lobby: &mut RtypeCore,
    now: Instant,
    client: SocketAddr,
    seq: u16,
    buf: &mut [u8],
) -> usize {
    lobby.handle_lobby_request(now, client, seq, LobbyRequest::ListRooms);
    let mut len = 0;
    while let Some(output) = lobby.poll_output() {
        if let Output::Lobby {
            seq,
            reply: LobbyReply::RoomList,
            ..
        } = output
        {
            let records = lobby.room_list().map(|info| RoomRecord {
                room_id: info.room.0,
                player_count: info.player_count,
                max_players: info.max_players,
                port: info.port,
                state: info.state.code(),
            });
            len = emit_room_list(buf, seq, records);
        }
    }
    len
}

/// A client's DATA datagram (sequence 1) broadcasting 32 bytes to the room, written into
/// `buf`; returns its length.
pub fn broadcast_data(buf: &mut [u8]) -> usize {
    ClientRepr {
        seq: 1,
        msg: ClientMsg::Data {
            target: instance::BROADCAST,
            data: &[0x5a; 32],
        },
    }
    .emit(buf)
}
