// Preloaded with NODE_OPTIONS=--require: makes every server that listens on a port
// without naming a host listen on 127.0.0.1 only.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const isPort = (p) => typeof p === "number" || (typeof p === "string" && /^[0-9]+$/.test(p));
  if (isPort(args[0]) && (args.length === 1 || typeof args[1] === "function")) {
    args.splice(1, 0, "127.0.0.1");
  } else if (typeof args[0] === "object" && args[0] !== null && args[0].port !== undefined && !args[0].host) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
