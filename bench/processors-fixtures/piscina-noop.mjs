// The baseline: a raw piscina task that does nothing.
export default function noop() {
  return null;
}
