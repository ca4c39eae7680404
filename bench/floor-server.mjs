#!/usr/bin/env node
// The floor of an exchange over HTTP on this machine: a server that does nothing but read the
// request body and answer `?bytes=N` bytes (a JSON string of
// spaces, so a client can parse it as it parses compactd's answer). What curl takes against it is the upload and the
// download alone, with no work in between, so reference / floor is the best ratio any
// server could reach here (bench/http.mjs --floor).
//
//   node bench/floor-server.mjs PORT
//
// HTTP/1.1 over `net`, no framework: the request head, `Expect: 100-continue`, a
// `content-length` body counted and dropped, keep-alive.

import net from "node:net";

const port = Number(process.argv[2]);
const answers = new Map();
const answer = (n) => {
	if (!answers.has(n)) answers.set(n, Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${n}\r\n\r\n`), Buffer.from(`"${" ".repeat(Math.max(n - 2, 0))}"`)]));
	return answers.get(n);
};

net
	.createServer({ noDelay: true }, (socket) => {
		let head = Buffer.alloc(0);
		let left = -1; // body bytes still to come; -1 while reading a head
		let size = 0;
		socket.on("data", (chunk) => {
			while (chunk.length > 0) {
				if (left < 0) {
					head = Buffer.concat([head, chunk]);
					const end = head.indexOf("\r\n\r\n");
					if (end < 0) return;
					const text = head.subarray(0, end).toString("latin1").toLowerCase();
					chunk = head.subarray(end + 4);
					head = Buffer.alloc(0);
					left = Number(/\r\ncontent-length:\s*(\d+)/.exec(text)?.[1] ?? 0);
					size = Number(/[?&]bytes=(\d+)/.exec(text.split("\r\n")[0])?.[1] ?? 2);
					if (text.includes("\r\nexpect: 100-continue")) socket.write("HTTP/1.1 100 Continue\r\n\r\n");
				}
				const take = Math.min(left, chunk.length);
				left -= take;
				chunk = chunk.subarray(take);
				if (left === 0) {
					socket.write(answer(size));
					left = -1;
				}
			}
		});
		socket.on("error", () => {});
	})
	.listen(port, "127.0.0.1", () => console.error(`floor server on 127.0.0.1:${port}`));
