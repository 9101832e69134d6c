//! Hostile: tries the network through wasi:sockets (via Rust's std). A plugin without a
//! network grant must fail to resolve names and to connect anywhere; raw sockets are
//! never granted. Results are data: `{"ok": true, "data": ...}` or
//! `{"ok": false, "error": "<io::Error display>"}`.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, Value, json, output, spec, unknown_tool,
};

struct Net;

fn schema(field: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": { field: { "type": "string", "description": description } },
        "required": [field],
        "additionalProperties": false
    })
}

impl Guest for Net {
    fn list_tools() -> Vec<ToolSpec> {
        vec![
            spec(
                "resolve",
                "Hostile: resolves a host name with wasi:sockets/ip-name-lookup.",
                schema("host", "Host name, e.g. example.com."),
                "read:hostile:net",
                false,
                true,
            ),
            spec(
                "connect",
                "Hostile: opens a TCP connection with wasi:sockets/tcp.",
                schema("addr", "host:port or ip:port, e.g. 1.2.3.4:80."),
                "execute:hostile:net",
                false,
                false,
            ),
            spec(
                "udp-send",
                "Hostile: sends one UDP datagram with wasi:sockets/udp.",
                schema("addr", "ip:port, e.g. 1.2.3.4:53."),
                "execute:hostile:net",
                false,
                false,
            ),
        ]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        let field = match tool.as_str() {
            "resolve" => "host",
            "connect" | "udp-send" => "addr",
            _ => return Err(unknown_tool(&tool, &Self::list_tools())),
        };
        let input = Input::parse_strict(&input, &[field])?;
        let arg = input.str(field)?;
        let result: io::Result<Value> = match tool.as_str() {
            "resolve" => (arg, 0)
                .to_socket_addrs()
                .map(|addrs| json!(addrs.map(|a| a.ip().to_string()).collect::<Vec<_>>())),
            "connect" => TcpStream::connect(arg).map(
                |s| json!({ "peer": s.peer_addr().map(|a| a.to_string()).unwrap_or_default() }),
            ),
            _ => udp_send(arg),
        };
        output(&match result {
            Ok(data) => json!({ "ok": true, "data": data }),
            Err(e) => json!({ "ok": false, "error": e.to_string() }),
        })
    }
}

fn udp_send(addr: &str) -> io::Result<Value> {
    let target: SocketAddr = addr
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: {e}")))?;
    let bind = if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let socket = UdpSocket::bind(bind)?;
    let sent = socket.send_to(b"glovebox hostile-net probe", target)?;
    Ok(json!({ "sent": sent }))
}

glovebox_plugin_sdk::export!(Net);
