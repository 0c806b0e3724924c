import largest, { Circle } from "./shapes";

export function main(): void {
  const c = new Circle(2);
  const big = largest([c]);
  console.log(big?.area(), c.describe());
}

main();

class Square {
  area(): number {
    return 1;
  }
  describe = () => String(this.area());
}
