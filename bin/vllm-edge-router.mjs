#!/usr/bin/env node
// The installed command: the router with exactly the flags it is given. It starts no simulated
// engines (only an explicit --demo does; `npm start` in a checkout passes it for the demo).
import '../dist/node/main.js';
