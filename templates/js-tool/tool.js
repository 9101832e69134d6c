// `{{name}}`: a Glovebox tool plugin written in JavaScript, with one tool,
// `{{name}}.greet`, which greets someone by name.
//
// The file runs on Glovebox's JavaScript shell (the boa engine, compiled into the
// component with this file: see Cargo.toml). Its top level runs once, when the host
// snapshots the component, with no grants at all: build tables there, and touch `fs`
// and `fetch` only in `call`. Each call then starts from that snapshot and sees only
// what the manifest ({{name}}.toml) grants: here, nothing.

const tools = [
    {
        name: 'greet',
        description: 'Greets someone by name.',
        inputSchema: {
            type: 'object',
            properties: { name: { type: 'string', description: 'Who to greet.' } },
            required: ['name'],
            additionalProperties: false,
        },
        // What the call does, as a colon path: permission hooks match on it.
        action: 'read:greeting',
        destructive: false,
        idempotent: true,
    },
];

// `input` is the parsed input, which the host has checked against `inputSchema`;
// `ctx` is {sessionId, sessionName, role, callId, jobId}. Return any JSON value.
function call(tool, input, ctx) {
    const name = input.name.trim();
    if (name === '') {
        // Refuses the input (`invalid_input`): name the field.
        throw new InvalidInput('`name` is blank: give the name of someone to greet');
    }
    return { greeting: `hello, ${name}`, role: ctx.role };
}
