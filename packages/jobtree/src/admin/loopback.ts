// Which addresses and Host names mean this machine. The admin endpoint's
// DNS-rebinding check applies to every loopback bind, so it must recognise
// every way of writing one: any address of 127.0.0.0/8, ::1, and the
// IPv4-mapped IPv6 forms of 127/8 (`::ffff:127.0.0.1`, which URLs print as
// `::ffff:7f00:1`).

import { isIPv4, isIPv6 } from 'node:net';

/** Whether `address` (an IP address, IPv6 without brackets) is a loopback address. */
export function isLoopbackAddress(address: string): boolean {
  if (isIPv4(address)) return address.startsWith('127.');
  if (!isIPv6(address)) return false;
  const groups = ipv6Groups(address);
  if (groups === undefined) return false;
  const zeros = (count: number) => groups.slice(0, count).every((group) => group === 0);
  if (zeros(7) && groups[7] === 1) return true;
  return zeros(5) && groups[5] === 0xffff && (groups[6] as number) >> 8 === 127;
}

/**
 * Whether a request's Host names this machine: `localhost` or a loopback
 * address literal (IPv6 in brackets), with or without a port. A page whose
 * own domain was rebound to a loopback address sends that domain instead.
 */
export function isLoopbackHost(hostHeader: string): boolean {
  const host = hostHeader.trim().toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end > 0 && /^(:\d*)?$/.test(host.slice(end + 1)) && isLoopbackAddress(host.slice(1, end));
  }
  const name = host.replace(/:\d*$/, '');
  return name === 'localhost' || (isIPv4(name) && isLoopbackAddress(name));
}

/** The eight 16-bit groups of a valid IPv6 address (a zone and a dotted IPv4 tail allowed). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(2).map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const split = (part: string) => (part === '' ? [] : part.split(':'));
  const head = split(halves[0] as string);
  const tail = halves.length === 2 ? split(halves[1] as string) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail].map((group) => Number.parseInt(group, 16));
  return groups.some((group) => Number.isNaN(group) || group > 0xffff) ? undefined : groups;
}
