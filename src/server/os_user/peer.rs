//! Which OS user a loopback client runs as: the owner of its end of the TCP connection, as
//! the kernel lists it in `/proc/net/tcp` and `/proc/net/tcp6`.
//!
//! The client's socket is the row whose local address is the peer address this server sees
//! and whose remote address is this server's end of the connection; its `uid` column is the
//! user that made the socket. Only a connection over loopback has its other end on this
//! machine (and in this network namespace), so only those are looked up.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The kernel's tables of TCP sockets (IPv4, then IPv6).
const TABLES: [&str; 2] = ["/proc/net/tcp", "/proc/net/tcp6"];

/// The uid that owns the client end of the connection from `peer` to `local` (this server's
/// end), when the client is on this machine and the kernel says; `None` elsewhere.
pub fn uid_of_peer(local: SocketAddr, peer: SocketAddr) -> Option<u32> {
    let (local, peer) = (canonical(local), canonical(peer));
    if !peer.ip().is_loopback() {
        return None;
    }
    TABLES.iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        uid_in_table(&text, peer, local)
    })
}

/// In a `/proc/net/tcp{,6}` table, the uid of the socket whose local address is `own` and
/// whose remote address is `remote`.
pub fn uid_in_table(table: &str, own: SocketAddr, remote: SocketAddr) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
        let (local, rem, uid) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
        let matches = parse_socket(local)? == own && parse_socket(rem)? == remote;
        matches.then(|| uid.parse().ok()).flatten()
    })
}

/// An address as the kernel prints it: the IP's 32-bit words in the machine's byte order,
/// then the port, all in hex (`0100007F:1F90` is 127.0.0.1:8080 on a little-endian machine).
fn parse_socket(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words = |hex: &str| -> Option<Vec<[u8; 4]>> {
        (0..hex.len() / 8)
            .map(|i| {
                let word = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
                Some(word.to_ne_bytes())
            })
            .collect()
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(*words(ip)?.first()?)),
        32 => {
            let bytes: Vec<u8> = words(ip)?.concat();
            IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?))
        }
        _ => return None,
    };
    Some(canonical(SocketAddr::new(ip, port)))
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is (a dual-stack listener sees an IPv4
/// client that way; the client's own socket is in the IPv4 table).
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An address in the kernel's spelling, on whatever byte order this machine has.
    fn kernel(addr: SocketAddr) -> String {
        let ip = match addr.ip() {
            IpAddr::V4(v4) => format!("{:08X}", u32::from_ne_bytes(v4.octets())),
            IpAddr::V6(v6) => v6
                .octets()
                .chunks(4)
                .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
                .collect(),
        };
        format!("{ip}:{:04X}", addr.port())
    }

    fn row(sl: u32, local: SocketAddr, rem: SocketAddr, uid: u32) -> String {
        format!(
            "   {sl}: {} {} 01 00000000:00000000 00:00000000 00000000  {uid}        0 4242 1 0000000000000000 20 4 30 10 -1",
            kernel(local),
            kernel(rem)
        )
    }

    const HEADER: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";

    fn sock(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_clients_row_is_found_not_the_servers() {
        let server = sock("127.0.0.1:8080");
        let client = sock("127.0.0.1:51000");
        let other = sock("127.0.0.1:51001");
        let table = [
            HEADER.to_owned(),
            row(0, sock("127.0.0.1:8080"), sock("0.0.0.0:0"), 998),
            // The server's own end of the connection: its uid is the server's.
            row(1, server, client, 998),
            // Another client on another port.
            row(2, other, server, 1001),
            row(3, client, server, 1000),
        ]
        .join("\n");
        assert_eq!(uid_in_table(&table, client, server), Some(1000));
        assert_eq!(uid_in_table(&table, other, server), Some(1001));
        assert_eq!(uid_in_table(&table, sock("127.0.0.1:52000"), server), None);
        // The same client port toward another server is another connection.
        assert_eq!(uid_in_table(&table, client, sock("127.0.0.1:9090")), None);
    }

    #[test]
    fn ipv6_and_mapped_addresses_are_read() {
        let server = sock("[::1]:8080");
        let client = sock("[::1]:40000");
        let table = [HEADER.to_owned(), row(0, client, server, 1234)].join("\n");
        assert_eq!(uid_in_table(&table, client, server), Some(1234));
        // A dual-stack listener's view of an IPv4 client is the IPv4 row.
        let mapped = sock("[::ffff:127.0.0.1]:40001");
        let v4_table = [
            HEADER.to_owned(),
            row(0, sock("127.0.0.1:40001"), sock("127.0.0.1:8080"), 77),
        ]
        .join("\n");
        assert_eq!(
            uid_in_table(
                &v4_table,
                canonical(mapped),
                canonical(sock("[::ffff:127.0.0.1]:8080"))
            ),
            Some(77)
        );
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn a_row_as_a_little_endian_kernel_prints_it() {
        let table = format!(
            "{HEADER}\n   5: 0100007F:C350 0100007F:1F90 01 00000000:00000000 02:000AFC0F 00000000  1000        0 99 2 0 20 4 30 10 -1\n\
             \x20  6: 00000000000000000000000001000000:9C40 00000000000000000000000001000000:1F90 01 00000000:00000000 00:00000000 00000000   999        0 98 1 0 20 4 30 10 -1"
        );
        assert_eq!(
            uid_in_table(&table, sock("127.0.0.1:50000"), sock("127.0.0.1:8080")),
            Some(1000)
        );
        assert_eq!(
            uid_in_table(&table, sock("[::1]:40000"), sock("[::1]:8080")),
            Some(999)
        );
    }

    #[test]
    fn unreadable_rows_and_remote_peers_find_nothing() {
        let table =
            format!("{HEADER}\n 0: nonsense\n 1: 0100007F:ZZZZ 0100007F:1F90 01 0 0 0 1000");
        assert_eq!(
            uid_in_table(&table, sock("127.0.0.1:1"), sock("127.0.0.1:8080")),
            None
        );
        // A peer on another machine is never looked up.
        assert_eq!(
            uid_of_peer(sock("10.0.0.1:8080"), sock("10.0.0.2:50000")),
            None
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_real_loopback_connection_is_owned_by_this_process_user() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(server).unwrap();
        let (accepted, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(
            uid_of_peer(accepted.local_addr().unwrap(), peer),
            Some(super::super::account::current_uid())
        );
    }
}
