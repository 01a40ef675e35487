/**
 * Fleet events (breaker transitions, health flips, quarantines) as the fleet reports them, fanned
 * out to whoever listens: the host's own handler (`RouterHost.onFleetEvent`) and the live fleet
 * page's statistics. A listener's fault is swallowed: it never reaches the fleet.
 */

export type FleetEventHandler = (
  level: 'info' | 'warn',
  message: string,
  fields: Record<string, unknown>,
) => void;

export class FleetEvents {
  private handlers: FleetEventHandler[];

  constructor(first?: FleetEventHandler) {
    this.handlers = first ? [first] : [];
  }

  add(handler: FleetEventHandler): void {
    this.handlers = [...this.handlers, handler];
  }

  emit(level: 'info' | 'warn', message: string, fields: Record<string, unknown>): void {
    for (const handle of this.handlers) {
      try {
        handle(level, message, fields);
      } catch {
        // A listener's fault never reaches the fleet.
      }
    }
  }
}
