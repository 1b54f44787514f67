// The live supervision tree of a jobs app, kept from its supervisors' events
// so that `app.system.tree()` answers at once, without a round of calls:
// which actor holds each place now, on which thread, since when, and how
// often it was restarted.

import type { ActorId, ActorSystem, ThreadId } from '@jobtree/actors';
import type { ChildType, SupervisorEvents } from '@jobtree/supervisor';

/** One place in the tree. */
export interface TreeNode {
  /** The registered name (`jobs_sup`, `notifier:email`, …) or, for an unnamed user child, its spec id. */
  name: string;
  kind: ChildType;
  /** The actor holding the place now; undefined while it is down. */
  id: ActorId | undefined;
  /** The thread it runs on: 0 is the main thread. */
  thread: ThreadId | undefined;
  /** Restarts of this place by its supervisor since the app started. */
  restarts: number;
  /** When the current actor started (epoch ms). */
  startedAt: number | undefined;
  children: TreeNode[];
}

interface Place {
  name: string;
  kind: ChildType;
  id: ActorId | undefined;
  restarts: number;
  startedAt: number | undefined;
  /** First start order among its siblings (places known before they start sort last). */
  order: number;
  /** Children of a supervisor place, in start order. */
  children?: Map<string, Place>;
  /** Whether children of this supervisor disappear when they exit (temporary). */
  dropOnExit?: boolean;
  /** Names a child spec id to the child's registered name. */
  nameOf?: (childId: string) => string;
  /** Extra places hanging off a child that are not supervisor children (a notifier's type monitor). */
  companion?: (childName: string) => string | undefined;
}

export class LiveTree {
  readonly #system: ActorSystem;
  readonly #root: Place;
  #starts = 0;

  constructor(system: ActorSystem, rootName: string) {
    this.#system = system;
    this.#root = { name: rootName, kind: 'supervisor', id: undefined, restarts: 0, startedAt: Date.now(), order: 0, children: new Map() };
  }

  /**
   * Follows a supervisor's events. `path` names the supervisor place under
   * the root (empty for the root itself).
   */
  follow(
    path: string[],
    events: SupervisorEvents,
    options: { dropOnExit?: boolean; nameOf?: (childId: string) => string; companion?: (childName: string) => string | undefined } = {},
  ): void {
    const place = this.#place(path);
    place.children ??= new Map();
    place.dropOnExit = options.dropOnExit ?? false;
    if (options.nameOf !== undefined) place.nameOf = options.nameOf;
    if (options.companion !== undefined) place.companion = options.companion;
    const children = place.children;
    const child = (id: string, type: ChildType): Place => {
      let known = children.get(id);
      if (known === undefined) {
        known = { name: place.nameOf?.(id) ?? id, kind: type, id: undefined, restarts: 0, startedAt: undefined, order: Number.POSITIVE_INFINITY };
        if (type === 'supervisor') known.children = new Map();
        children.set(id, known);
      }
      return known;
    };
    events.on('child_started', (event) => {
      const known = child(event.id, event.type);
      if (known.order === Number.POSITIVE_INFINITY) known.order = ++this.#starts;
      known.id = event.actor;
      known.startedAt = Date.now();
    });
    events.on('child_restarted', (event) => {
      const known = children.get(event.id);
      if (known === undefined) return;
      known.restarts += 1;
      known.id = event.actor;
      known.startedAt = Date.now();
    });
    events.on('child_exited', (event) => {
      const known = children.get(event.id);
      if (known === undefined || known.id !== event.actor) return;
      if (place.dropOnExit) children.delete(event.id);
      else known.id = undefined;
    });
  }

  /** A snapshot of the whole tree. */
  snapshot(): TreeNode {
    const root = this.#node(this.#root);
    root.id = this.#system.whereis(this.#root.name);
    root.thread = root.id === undefined ? undefined : this.#system.threadOf(root.id);
    return root;
  }

  #node(place: Place): TreeNode {
    const children: TreeNode[] = [];
    const places = [...(place.children?.values() ?? [])].sort((a, b) => a.order - b.order);
    for (const child of places) {
      const node = this.#node(child);
      const companion = place.companion?.(child.name);
      if (companion !== undefined) {
        const id = this.#system.whereis(companion);
        node.children.push({
          name: companion,
          kind: 'worker',
          id,
          thread: id === undefined ? undefined : this.#system.threadOf(id),
          restarts: 0,
          startedAt: undefined,
          children: [],
        });
      }
      children.push(node);
    }
    return {
      name: place.name,
      kind: place.kind,
      id: place.id,
      thread: place.id === undefined ? undefined : this.#system.threadOf(place.id),
      restarts: place.restarts,
      startedAt: place.startedAt,
      children,
    };
  }

  #place(path: string[]): Place {
    let place = this.#root;
    for (const step of path) {
      place.children ??= new Map();
      let next = place.children.get(step);
      if (next === undefined) {
        next = { name: step, kind: 'supervisor', id: undefined, restarts: 0, startedAt: undefined, order: Number.POSITIVE_INFINITY, children: new Map() };
        place.children.set(step, next);
      }
      place = next;
    }
    return place;
  }
}

/** The tree as indented text, one actor a line (for logs and demos). */
export function formatTree(node: TreeNode, indent = ''): string {
  const where = node.id === undefined ? 'down' : `${node.id} on thread ${node.thread ?? '?'}`;
  const restarts = node.restarts > 0 ? `, restarted ${node.restarts}×` : '';
  const lines = [`${indent}${node.name} (${node.kind}, ${where}${restarts})`];
  for (const child of node.children) lines.push(formatTree(child, `${indent}  `));
  return lines.join('\n');
}
