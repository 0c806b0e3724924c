import * as React from "react";

interface Props<T> {
  items: T[];
}

export function List<T>({ items }: Props<T>) {
  return <ul>{items.map((x) => <li>{String(x)}</li>)}</ul>;
}

export default class View extends React.Component<Props<string>> {
  render() {
    return <List items={this.props.items} />;
  }
}
