// A Glovebox session run by the official TypeScript MCP client
// (`@modelcontextprotocol/client`) over streamable HTTP, in both protocol
// revisions: 2026-07-28 (`versionNegotiation: {mode: 'auto'}`: it probes
// `server/discover` and speaks the newest revision offered) and 2025-11-25
// (the client's default, `legacy`: `initialize`, an MCP session).
//
// Run by `tests/all/mcp_ts.rs`: `node session.mjs URL`. Prints one JSON
// line per revision with what it saw; exits non-zero on any failure.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);
const SESSION = 'io.glovebox/session';

function check(ok, what, value) {
    if (!ok) {
        throw new Error(`${what}: ${JSON.stringify(value)}`);
    }
}

function data(result) {
    if (result.structuredContent !== undefined) return result.structuredContent;
    return JSON.parse(result.content[0].text);
}

async function run(era) {
    const options = era === 'modern' ? { versionNegotiation: { mode: 'auto' } } : {};
    const client = new Client({ name: 'glovebox-ts-test', version: '0' }, options);
    const transport = new StreamableHTTPClientTransport(url);
    await client.connect(transport);
    const version = client.getNegotiatedProtocolVersion();
    check(version === (era === 'modern' ? '2026-07-28' : '2025-11-25'), 'negotiated', version);
    const tools = await client.listTools();
    const names = tools.tools.map(t => t.name);
    check(names.includes('echo.echo') && names.includes('session_start'), 'tools', names);

    const name = `ts-${era}`;
    const started = data(await client.callTool({
        name: 'session_start',
        arguments: { role: 'workagent', project: 'mcp', name }
    }));
    check(typeof started.id === 'string', 'session_start', started);
    // Under 2026-07-28 the session is named in each request's `_meta`; under
    // 2025-11-25 the connection is bound to it.
    const meta = era === 'modern' ? { [SESSION]: started.id } : undefined;
    const echoed = await client.callTool({ name: 'echo.echo', arguments: { message: `hi from ${era}` }, _meta: meta });
    check(!echoed.isError && data(echoed).message === `hi from ${era}`, 'echo', echoed);
    const status = data(await client.callTool({ name: 'session_status', arguments: {}, _meta: meta }));
    check(status.id === started.id && status.counters.calls === 1, 'session_status', status);
    const log = await client.readResource({ uri: `glovebox://sessions/${started.id}/log?limit=500` });
    const events = JSON.parse(log.contents[0].text).events;
    check(events.some(e => e.kind.type === 'call_finished'), 'log', events);
    const ended = data(await client.callTool({ name: 'session_end', arguments: {}, _meta: meta }));
    check(ended.status === 'completed', 'session_end', ended);
    await client.close();
    // Under 2026-07-28 the answer says that nothing was bound.
    check((era === 'modern') === (typeof started.binding === 'string'), 'binding', started);
    return { era, version, session: started.id, events: events.length };
}

for (const era of ['modern', 'legacy']) {
    console.log(JSON.stringify(await run(era)));
}
