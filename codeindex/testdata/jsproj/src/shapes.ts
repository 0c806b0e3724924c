import { clamp } from "./util";

/**
 * A shape with an area.
 */
export interface Shape {
  area(): number;
}

/** Units the shapes are measured in. */
export enum Unit {
  Metre,
  Foot,
}

export type Pair<T> = [T, T];

/** Records every class it decorates. */
function registered<T>(cls: T): T {
  return cls;
}

// Circle is round.
@registered
export class Circle implements Shape {
  static count = 0;
  private readonly r: number;

  constructor(radius: number) {
    this.r = clamp(radius, 0, 100);
  }

  /** The area, rounded. */
  @memo
  area(): number {
    return Math.round(Math.PI * this.r ** 2);
  }

  get radius(): number {
    return this.r;
  }

  describe = (): string => `circle of area ${this.area()}`;
}

export abstract class Polygon {
  abstract sides(): number;
}

/**
 * Adds up the areas.
 */
export const totalArea = (
  shapes: Shape[],
): number => shapes.reduce((sum, s) => sum + s.area(), 0);

export default function largest(shapes: Shape[]): Shape | undefined {
  return shapes.sort((a, b) => b.area() - a.area())[0];
}
